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
    let mut p = Parser {
        src: selector,
        pos: 0,
    };
    let mut exprs = Vec::new();
    p.skip_ws();
    if p.at_end() {
        return Ok(Selector::default());
    }
    loop {
        exprs.push(p.requirement()?);
        p.skip_ws();
        if p.at_end() {
            break;
        }
        p.expect(',')?;
        p.skip_ws();
    }
    Ok(exprs.into_iter().collect())
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    fn at_end(&self) -> bool {
        self.pos >= self.src.len()
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn skip_ws(&mut self) {
        while let Some(c) = self.peek()
            && c.is_whitespace()
        {
            self.pos += c.len_utf8();
        }
    }

    fn error(&self, reason: impl Into<String>) -> SelectorParseError {
        SelectorParseError {
            selector: self.src.to_owned(),
            position: self.pos,
            reason: reason.into(),
        }
    }

    fn expect(&mut self, c: char) -> Result<(), SelectorParseError> {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            Ok(())
        } else {
            Err(self.error(format!("expected {c:?}")))
        }
    }

    /// Reads a run of label-key or label-value characters (may be empty).
    fn token(&mut self, allow_slash: bool) -> &str {
        let start = self.pos;
        while let Some(c) = self.peek()
            && (c.is_ascii_alphanumeric()
                || matches!(c, '-' | '_' | '.')
                || (allow_slash && c == '/'))
        {
            self.pos += 1;
        }
        &self.src[start..self.pos]
    }

    fn key(&mut self) -> Result<String, SelectorParseError> {
        let at = self.pos;
        let key = self.token(true).to_owned();
        if key.is_empty() {
            self.pos = at;
            return Err(self.error("expected a label key"));
        }
        let name = key.rsplit('/').next().unwrap_or("");
        if name.is_empty() || key.matches('/').count() > 1 || key.starts_with('/') {
            self.pos = at;
            return Err(self.error(format!("{key:?} is not a valid label key")));
        }
        Ok(key)
    }

    fn value(&mut self) -> String {
        self.token(false).to_owned()
    }

    /// Reads a keyword (`in`, `notin`) if it comes next as a whole word.
    fn keyword(&mut self, word: &str) -> bool {
        let rest = self.rest();
        if let Some(after) = rest.strip_prefix(word)
            && after
                .chars()
                .next()
                .is_none_or(|c| c.is_whitespace() || c == '(')
        {
            self.pos += word.len();
            return true;
        }
        false
    }

    fn value_set(&mut self) -> Result<BTreeSet<String>, SelectorParseError> {
        self.skip_ws();
        self.expect('(')?;
        let mut values = BTreeSet::new();
        loop {
            self.skip_ws();
            values.insert(self.value());
            self.skip_ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(')') => {
                    self.pos += 1;
                    return Ok(values);
                }
                _ => return Err(self.error("expected ',' or ')' in a value set")),
            }
        }
    }

    fn requirement(&mut self) -> Result<Expression, SelectorParseError> {
        if self.peek() == Some('!') {
            self.pos += 1;
            self.skip_ws();
            return Ok(Expression::DoesNotExist(self.key()?));
        }
        let key = self.key()?;
        self.skip_ws();
        let rest = self.rest();
        if rest.is_empty() || rest.starts_with(',') {
            return Ok(Expression::Exists(key));
        }
        if let Some(op) = ["==", "!=", "="]
            .into_iter()
            .find(|op| rest.starts_with(op))
        {
            self.pos += op.len();
            self.skip_ws();
            let value = self.value();
            return Ok(if op == "!=" {
                Expression::NotEqual(key, value)
            } else {
                Expression::Equal(key, value)
            });
        }
        if self.keyword("notin") {
            return Ok(Expression::NotIn(key, self.value_set()?));
        }
        if self.keyword("in") {
            return Ok(Expression::In(key, self.value_set()?));
        }
        if rest.starts_with('>') || rest.starts_with('<') {
            return Err(
                self.error("the operators > and < are not supported in label selectors here")
            );
        }
        Err(self.error("expected one of: =, ==, !=, in, notin, ',' or the end"))
    }
}

#[cfg(test)]
mod tests;
