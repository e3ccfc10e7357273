//! Parsing label selector strings into kube's [`Selector`].

use std::collections::BTreeSet;

use kube_core::{Expression, Selector};

/// A label selector string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector {selector:?} at byte {position}: {reason}")]
pub struct SelectorParseError {
    /// The selector as given.
    pub selector: String,
    /// Where parsing failed (a byte offset).
    pub position: usize,
    /// What was wrong there.
    pub reason: String,
}

/// Parses a label selector in the syntax of `kubectl -l` and the API's `labelSelector`
/// parameter into kube's [`Selector`], whose [`matches`](kube_core::SelectorExt::matches)
/// checks a label map.
///
/// Requirements are separated by commas and all must hold:
///
/// | syntax | holds when |
/// | --- | --- |
/// | `key=value`, `key==value` | the label is present with that value |
/// | `key!=value` | the label is absent or has another value |
/// | `key in (a,b)` | the label is present with one of the values |
/// | `key notin (a,b)` | the label is absent or has none of the values |
/// | `key` | the label is present |
/// | `!key` | the label is absent |
///
/// An empty string selects everything. Keys may carry a prefix (`app.kubernetes.io/name`);
/// values may be empty (`key=`). The numeric comparisons `key>1`/`key<1`, which only node
/// affinity uses, are not supported and give an error.
///
/// # Errors
/// [`SelectorParseError`] with the position and the reason.
///
/// ```
/// use std::collections::BTreeMap;
/// use informer_core::selector::parse_label_selector;
/// use kube_core::SelectorExt;
///
/// let selector = parse_label_selector("app=web, tier in (front,edge), !canary").unwrap();
/// let labels = BTreeMap::from([
///     ("app".to_string(), "web".to_string()),
///     ("tier".to_string(), "edge".to_string()),
/// ]);
/// assert!(selector.matches(&labels));
/// assert!(parse_label_selector("app in (web").is_err());
/// ```
pub fn parse_label_selector(selector: &str) -> Result<Selector, SelectorParseError> {
    let src = selector.as_bytes();
    let text = |span: Span| selector[span.start..span.end].to_owned();
    let mut exprs = Vec::new();
    let mut set: Option<(bool, String, BTreeSet<String>)> = None;
    let mut lexer = Lexer::START;
    loop {
        let (piece, next) = match lexer.next(src) {
            Ok(Some(step)) => step,
            Ok(None) => break,
            Err((position, fault)) => {
                let reason = match fault {
                    Fault::BadKey(key) => format!("{:?} is not a valid label key", text(key)),
                    other => other.reason().to_owned(),
                };
                return Err(SelectorParseError {
                    selector: selector.to_owned(),
                    position,
                    reason,
                });
            }
        };
        lexer = next;
        match piece {
            Piece::Exists(key) => exprs.push(Expression::Exists(text(key))),
            Piece::NotExists(key) => exprs.push(Expression::DoesNotExist(text(key))),
            Piece::Equal(key, value) => exprs.push(Expression::Equal(text(key), text(value))),
            Piece::NotEqual(key, value) => {
                exprs.push(Expression::NotEqual(text(key), text(value)));
            }
            Piece::Set { key, not } => set = Some((not, text(key), BTreeSet::new())),
            Piece::Value { value, last } => {
                let Some((not, key, mut values)) = set.take() else {
                    unreachable!("the lexer gives set values only after a set's key")
                };
                values.insert(text(value));
                if last {
                    exprs.push(if not {
                        Expression::NotIn(key, values)
                    } else {
                        Expression::In(key, values)
                    });
                } else {
                    set = Some((not, key, values));
                }
            }
        }
    }
    Ok(exprs.into_iter().collect())
}

/// Panics, at compile time when called in a constant, if `selector` is not a label
/// selector [`parse_label_selector`] accepts: `#[derive(ControllerSpec)]` checks its
/// `labels = "..."` this way, so that a malformed selector is a compile error on the
/// literal rather than an informer that never syncs.
///
/// ```
/// const _: () = informer_core::selector::assert_label_selector("app=web, tier in (a,b)");
/// ```
///
/// ```compile_fail
/// const _: () = informer_core::selector::assert_label_selector("app==web=");
/// ```
#[doc(hidden)]
pub const fn assert_label_selector(selector: &str) {
    let src = selector.as_bytes();
    let mut lexer = Lexer::START;
    loop {
        match lexer.next(src) {
            Ok(Some((_, next))) => lexer = next,
            Ok(None) => return,
            Err((_, fault)) => panic!("{}", fault.message()),
        }
    }
}

/// A range of the selector's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
}

/// A requirement, or part of one, as [`Lexer::next`] reads it.
#[derive(Clone, Copy, Debug)]
enum Piece {
    /// `key`
    Exists(Span),
    /// `!key`
    NotExists(Span),
    /// `key=value`, `key==value`
    Equal(Span, Span),
    /// `key!=value`
    NotEqual(Span, Span),
    /// `key in (` or `key notin (`: its values come next.
    Set { key: Span, not: bool },
    /// A value of the set begun last; `last` at its `)`.
    Value { value: Span, last: bool },
}

/// What is wrong at a position.
#[derive(Clone, Copy, Debug)]
enum Fault {
    ExpectedKey,
    BadKey(Span),
    ExpectedComma,
    ExpectedOpenParen,
    ExpectedCommaOrClose,
    Comparison,
    ExpectedOperator,
}

impl Fault {
    /// The reason, as [`SelectorParseError::reason`] gives it (a bad key is named there).
    const fn reason(self) -> &'static str {
        match self {
            Self::ExpectedKey => "expected a label key",
            Self::BadKey(_) => "not a valid label key (`prefix/name`, one slash at most)",
            Self::ExpectedComma => "expected ','",
            Self::ExpectedOpenParen => "expected '('",
            Self::ExpectedCommaOrClose => "expected ',' or ')' in a value set",
            Self::Comparison => "the operators > and < are not supported in label selectors here",
            Self::ExpectedOperator => "expected one of: =, ==, !=, in, notin, ',' or the end",
        }
    }

    /// The reason with what it is about, for a compile error.
    const fn message(self) -> &'static str {
        match self {
            Self::ExpectedKey => "invalid label selector: expected a label key",
            Self::BadKey(_) => {
                "invalid label selector: a label key is `name` or `prefix/name`, one slash at most"
            }
            Self::ExpectedComma => {
                "invalid label selector: expected ',' between requirements (`app=web,tier=front`)"
            }
            Self::ExpectedOpenParen => {
                "invalid label selector: expected '(' after `in` or `notin` (`tier in (a,b)`)"
            }
            Self::ExpectedCommaOrClose => {
                "invalid label selector: expected ',' or ')' in a value set (`tier in (a,b)`)"
            }
            Self::Comparison => "invalid label selector: the operators > and < are not supported",
            Self::ExpectedOperator => {
                "invalid label selector: expected one of =, ==, !=, in, notin, ',' or the end after a key"
            }
        }
    }
}

/// Where the lexer is: what may come next, from byte `pos`.
#[derive(Clone, Copy, Debug)]
struct Lexer {
    pos: usize,
    state: State,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// The start: a requirement, or the end (an empty selector).
    First,
    /// After a requirement: a comma or the end.
    Separator,
    /// Inside a value set.
    Set,
}

/// Go's label selector lexer's whitespace.
const fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

const fn is_token(b: u8, slash: bool) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') || (slash && b == b'/')
}

const fn starts_with(src: &[u8], pos: usize, word: &[u8]) -> bool {
    if src.len() - pos < word.len() {
        return false;
    }
    let mut i = 0;
    while i < word.len() {
        if src[pos + i] != word[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl Lexer {
    const START: Self = Self {
        pos: 0,
        state: State::First,
    };

    const fn at(pos: usize, state: State) -> Self {
        Self { pos, state }
    }

    /// The next piece of `src` and the lexer after it; `None` at a valid end. The one
    /// grammar of both [`parse_label_selector`] and [`assert_label_selector`].
    const fn next(self, src: &[u8]) -> Result<Option<(Piece, Self)>, (usize, Fault)> {
        let mut pos = skip_space(src, self.pos);
        match self.state {
            State::First => {
                if pos == src.len() {
                    return Ok(None);
                }
                requirement(src, pos)
            }
            State::Separator => {
                if pos == src.len() {
                    return Ok(None);
                }
                if src[pos] != b',' {
                    return Err((pos, Fault::ExpectedComma));
                }
                pos = skip_space(src, pos + 1);
                requirement(src, pos)
            }
            State::Set => {
                let value = token(src, pos, false);
                pos = skip_space(src, value.end);
                if pos < src.len() && src[pos] == b',' {
                    let next = Self::at(pos + 1, State::Set);
                    Ok(Some((Piece::Value { value, last: false }, next)))
                } else if pos < src.len() && src[pos] == b')' {
                    let next = Self::at(pos + 1, State::Separator);
                    Ok(Some((Piece::Value { value, last: true }, next)))
                } else {
                    Err((pos, Fault::ExpectedCommaOrClose))
                }
            }
        }
    }
}

const fn skip_space(src: &[u8], mut pos: usize) -> usize {
    while pos < src.len() && is_space(src[pos]) {
        pos += 1;
    }
    pos
}

/// A run of label-key (`slash`) or label-value characters from `pos` (maybe empty).
const fn token(src: &[u8], pos: usize, slash: bool) -> Span {
    let mut end = pos;
    while end < src.len() && is_token(src[end], slash) {
        end += 1;
    }
    Span { start: pos, end }
}

const fn key(src: &[u8], pos: usize) -> Result<Span, (usize, Fault)> {
    let key = token(src, pos, true);
    if key.start == key.end {
        return Err((pos, Fault::ExpectedKey));
    }
    let (mut slashes, mut i) = (0, key.start);
    while i < key.end {
        if src[i] == b'/' {
            slashes += 1;
        }
        i += 1;
    }
    if slashes > 1 || src[key.start] == b'/' || src[key.end - 1] == b'/' {
        return Err((pos, Fault::BadKey(key)));
    }
    Ok(key)
}

/// `in` or `notin` at `pos`, as a whole word.
const fn keyword(src: &[u8], pos: usize, word: &[u8]) -> bool {
    if !starts_with(src, pos, word) {
        return false;
    }
    let after = pos + word.len();
    after == src.len() || is_space(src[after]) || src[after] == b'('
}

/// One requirement from `pos` (whitespace skipped).
const fn requirement(src: &[u8], pos: usize) -> Result<Option<(Piece, Lexer)>, (usize, Fault)> {
    if pos < src.len() && src[pos] == b'!' {
        let key = match key(src, skip_space(src, pos + 1)) {
            Ok(key) => key,
            Err(e) => return Err(e),
        };
        return Ok(Some((
            Piece::NotExists(key),
            Lexer::at(key.end, State::Separator),
        )));
    }
    let key = match key(src, pos) {
        Ok(key) => key,
        Err(e) => return Err(e),
    };
    let pos = skip_space(src, key.end);
    if pos == src.len() || src[pos] == b',' {
        return Ok(Some((
            Piece::Exists(key),
            Lexer::at(key.end, State::Separator),
        )));
    }
    let (op_len, not) = if starts_with(src, pos, b"==") {
        (2, false)
    } else if starts_with(src, pos, b"!=") {
        (2, true)
    } else if src[pos] == b'=' {
        (1, false)
    } else {
        (0, false)
    };
    if op_len > 0 {
        let value = token(src, skip_space(src, pos + op_len), false);
        let piece = if not {
            Piece::NotEqual(key, value)
        } else {
            Piece::Equal(key, value)
        };
        return Ok(Some((piece, Lexer::at(value.end, State::Separator))));
    }
    let (word_len, not): (usize, bool) = if keyword(src, pos, b"notin") {
        (5, true)
    } else if keyword(src, pos, b"in") {
        (2, false)
    } else if src[pos] == b'>' || src[pos] == b'<' {
        return Err((pos, Fault::Comparison));
    } else {
        return Err((pos, Fault::ExpectedOperator));
    };
    let open = skip_space(src, pos + word_len);
    if open == src.len() || src[open] != b'(' {
        return Err((open, Fault::ExpectedOpenParen));
    }
    let lexer = Lexer::at(open + 1, State::Set);
    Ok(Some((Piece::Set { key, not }, lexer)))
}

#[cfg(test)]
mod tests;
