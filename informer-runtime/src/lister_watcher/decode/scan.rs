//! [`ListScanner`]: finds the items of a list response (`{"metadata":{..},"items":[..]}`)
//! in its bytes as they arrive, without parsing them, so that each item can be decoded on
//! its own (and the response never held whole).

use std::ops::Range;

use memchr::memchr2;

use super::super::json::DecodeError;

/// A top-level field of a list response the scanner reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    /// `metadata` (a `ListMeta`).
    Metadata,
    /// `kind`.
    Kind,
    /// `apiVersion`.
    ApiVersion,
    /// Any other field (skipped).
    Other,
    /// `items` (reported item by item).
    Items,
}

impl Field {
    fn of(key: &[u8]) -> Self {
        match key {
            b"items" => Field::Items,
            b"metadata" => Field::Metadata,
            b"kind" => Field::Kind,
            b"apiVersion" => Field::ApiVersion,
            _ => Field::Other,
        }
    }
}

/// What the scanner found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Token {
    /// One item of `items`: its bytes in the buffer.
    Item(Range<usize>),
    /// The value of `metadata`, `kind` or `apiVersion`: its bytes in the buffer.
    Field(Field, Range<usize>),
}

/// Where the scanner is in the response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum At {
    /// Before the opening brace.
    Start,
    /// In the top-level object, before a key (or the closing brace if `first`).
    Key { first: bool },
    /// After a key, before its colon.
    Colon(Field),
    /// After the colon, before the value.
    Value(Field),
    /// Inside a value (it starts at `start`).
    InValue(Field),
    /// After a value: a comma or the closing brace.
    AfterValue,
    /// In `items`, before an item (or the closing bracket if `first`).
    Item { first: bool },
    /// Inside an item (it starts at `start`).
    InItem,
    /// After an item: a comma or the closing bracket.
    AfterItem,
    /// After the closing brace.
    Done,
}

/// What kind of value is being scanned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// An object or an array: `open` and `close` are its brackets.
    Nested { open: u8, close: u8 },
    /// A string.
    Text,
    /// A number, `true`, `false` or `null`.
    Scalar,
}

/// Scans a list response for its items, resuming where it stopped when more bytes come.
///
/// Positions are indexes into the buffer the caller passes to [`next`](Self::next) each time
/// (the same bytes, possibly with more at the end); after dropping a prefix of `n` bytes the
/// caller calls [`shift`](Self::shift)`(n)`. Each byte is looked at about once: strings are
/// crossed with `memchr`, and an item's end is found by counting its braces alone (brackets
/// inside a valid object are balanced). The scanner does not validate what it skips; an
/// item that is not valid JSON fails when it is decoded.
#[derive(Debug)]
pub(crate) struct ListScanner {
    at: At,
    /// Where scanning resumes.
    pos: usize,
    /// Where the value or item being scanned starts.
    start: usize,
    shape: Shape,
    /// Nesting depth inside the value being scanned.
    depth: usize,
    /// Inside a string of the value being scanned.
    in_string: bool,
    /// The buffer ended right after a backslash inside a string.
    escape: bool,
}

impl Default for ListScanner {
    fn default() -> Self {
        Self {
            at: At::Start,
            pos: 0,
            start: 0,
            shape: Shape::Scalar,
            depth: 0,
            in_string: false,
            escape: false,
        }
    }
}

fn malformed(what: &str) -> DecodeError {
    DecodeError::new(format!("malformed list response: {what}"))
}

fn skip_space(buf: &[u8], mut pos: usize) -> usize {
    while pos < buf.len() && matches!(buf[pos], b' ' | b'\t' | b'\r' | b'\n') {
        pos += 1;
    }
    pos
}

/// The end (exclusive) of the string whose opening quote is at `open`, if it is in `buf`.
fn string_end(buf: &[u8], open: usize) -> Option<usize> {
    let mut p = open + 1;
    loop {
        let at = p + memchr2(b'"', b'\\', &buf[p..])?;
        if buf[at] == b'"' {
            return Some(at + 1);
        }
        p = at + 2;
        if p > buf.len() {
            return None;
        }
    }
}

impl ListScanner {
    /// The first byte the caller must keep: everything before it has been scanned and
    /// reported (or skipped).
    pub(crate) fn keep_from(&self) -> usize {
        match self.at {
            At::InValue(_) | At::InItem => self.start,
            _ => self.pos,
        }
    }

    /// The caller dropped the first `n` bytes of the buffer (`n <= keep_from()`).
    pub(crate) fn shift(&mut self, n: usize) {
        debug_assert!(n <= self.keep_from());
        self.pos -= n;
        self.start = self.start.saturating_sub(n);
    }

    /// Whether the response ended where it should (after its closing brace).
    ///
    /// # Errors
    /// The response is cut short.
    pub(crate) fn finish(&self, buf: &[u8]) -> Result<(), DecodeError> {
        if self.at == At::Done && skip_space(buf, self.pos) == buf.len() {
            Ok(())
        } else {
            Err(malformed("the response ended before the list did"))
        }
    }

    /// The next item or reported field in `buf`; `Ok(None)` if more bytes are needed (or the
    /// response is done).
    ///
    /// # Errors
    /// The bytes are not a list response.
    pub(crate) fn next(&mut self, buf: &[u8]) -> Result<Option<Token>, DecodeError> {
        loop {
            match self.at {
                At::Start => {
                    let Some(pos) = self.structural(buf) else {
                        return Ok(None);
                    };
                    if buf[pos] != b'{' {
                        return Err(malformed("it is not a JSON object"));
                    }
                    self.pos = pos + 1;
                    self.at = At::Key { first: true };
                }
                At::Key { first } => {
                    let Some(pos) = self.structural(buf) else {
                        return Ok(None);
                    };
                    match buf[pos] {
                        b'}' if first => {
                            self.pos = pos + 1;
                            self.at = At::Done;
                        }
                        b'"' => {
                            let Some(end) = string_end(buf, pos) else {
                                return Ok(None);
                            };
                            self.pos = end;
                            self.at = At::Colon(Field::of(&buf[pos + 1..end - 1]));
                        }
                        _ => return Err(malformed("expected a field name")),
                    }
                }
                At::Colon(field) => {
                    let Some(pos) = self.structural(buf) else {
                        return Ok(None);
                    };
                    if buf[pos] != b':' {
                        return Err(malformed("expected ':' after a field name"));
                    }
                    self.pos = pos + 1;
                    self.at = At::Value(field);
                }
                At::Value(field) => {
                    let Some(pos) = self.structural(buf) else {
                        return Ok(None);
                    };
                    if field == Field::Items && buf[pos] == b'[' {
                        self.pos = pos + 1;
                        self.at = At::Item { first: true };
                    } else {
                        // `items` may also be `null`: skipped as any other value.
                        let field = if field == Field::Items {
                            Field::Other
                        } else {
                            field
                        };
                        self.begin_value(buf, pos);
                        self.at = At::InValue(field);
                    }
                }
                At::InValue(field) => {
                    let Some(end) = self.value_end(buf) else {
                        return Ok(None);
                    };
                    self.pos = end;
                    self.at = At::AfterValue;
                    if field != Field::Other {
                        return Ok(Some(Token::Field(field, self.start..end)));
                    }
                }
                At::AfterValue => {
                    let Some(pos) = self.structural(buf) else {
                        return Ok(None);
                    };
                    self.pos = pos + 1;
                    self.at = match buf[pos] {
                        b',' => At::Key { first: false },
                        b'}' => At::Done,
                        _ => return Err(malformed("expected ',' or '}' after a value")),
                    };
                }
                At::Item { first } => {
                    let Some(pos) = self.structural(buf) else {
                        return Ok(None);
                    };
                    match buf[pos] {
                        b']' if first => {
                            self.pos = pos + 1;
                            self.at = At::AfterValue;
                        }
                        b'{' => {
                            self.begin_value(buf, pos);
                            self.at = At::InItem;
                        }
                        _ => return Err(malformed("an item is not an object")),
                    }
                }
                At::InItem => {
                    let Some(end) = self.value_end(buf) else {
                        return Ok(None);
                    };
                    self.pos = end;
                    self.at = At::AfterItem;
                    return Ok(Some(Token::Item(self.start..end)));
                }
                At::AfterItem => {
                    let Some(pos) = self.structural(buf) else {
                        return Ok(None);
                    };
                    self.pos = pos + 1;
                    self.at = match buf[pos] {
                        b',' => At::Item { first: false },
                        b']' => At::AfterValue,
                        _ => return Err(malformed("expected ',' or ']' after an item")),
                    };
                }
                At::Done => {
                    self.pos = skip_space(buf, self.pos);
                    if self.pos < buf.len() {
                        return Err(malformed("there is more after the list"));
                    }
                    return Ok(None);
                }
            }
        }
    }

    /// The next non-space byte's position, if `buf` has one (whitespace before it is
    /// consumed).
    fn structural(&mut self, buf: &[u8]) -> Option<usize> {
        self.pos = skip_space(buf, self.pos);
        (self.pos < buf.len()).then_some(self.pos)
    }

    /// Starts scanning the value whose first byte is at `pos`.
    fn begin_value(&mut self, buf: &[u8], pos: usize) {
        self.start = pos;
        self.depth = 0;
        self.in_string = false;
        self.escape = false;
        self.shape = match buf[pos] {
            b'{' => Shape::Nested {
                open: b'{',
                close: b'}',
            },
            b'[' => Shape::Nested {
                open: b'[',
                close: b']',
            },
            b'"' => Shape::Text,
            _ => Shape::Scalar,
        };
        match self.shape {
            Shape::Nested { .. } => {
                self.depth = 1;
                self.pos = pos + 1;
            }
            Shape::Text => {
                self.in_string = true;
                self.pos = pos + 1;
            }
            Shape::Scalar => self.pos = pos,
        }
    }

    /// Scans on from `pos`; the end (exclusive) of the value once it is in `buf`.
    fn value_end(&mut self, buf: &[u8]) -> Option<usize> {
        if self.shape == Shape::Scalar {
            let end = buf[self.pos..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'));
            return match end {
                Some(n) => Some(self.pos + n),
                None => {
                    self.pos = buf.len();
                    None
                }
            };
        }
        let (open, close) = match self.shape {
            Shape::Nested { open, close } => (open, close),
            // A string ends at its quote; no bracket counts.
            _ => (b'"', b'"'),
        };
        // A plain loop over the bytes: JSON objects are dense with short strings, where
        // stopping a vector search at every quote costs more than looking at each byte.
        let n = buf.len();
        let mut p = self.pos;
        while p < n {
            if self.in_string {
                if self.escape {
                    self.escape = false;
                    p += 1;
                    continue;
                }
                while p < n && !matches!(buf[p], b'"' | b'\\') {
                    p += 1;
                }
                if p == n {
                    break;
                }
                if buf[p] == b'\\' {
                    self.escape = true;
                } else {
                    self.in_string = false;
                    if self.shape == Shape::Text {
                        return Some(p + 1);
                    }
                }
                p += 1;
                continue;
            }
            while p < n && buf[p] != b'"' && buf[p] != open && buf[p] != close {
                p += 1;
            }
            if p == n {
                break;
            }
            let b = buf[p];
            p += 1;
            if b == b'"' {
                self.in_string = true;
            } else if b == open {
                self.depth += 1;
            } else {
                self.depth -= 1;
                if self.depth == 0 {
                    return Some(p);
                }
            }
        }
        self.pos = n;
        None
    }
}

#[cfg(test)]
mod tests;
