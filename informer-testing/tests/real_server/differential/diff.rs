//! Where two JSON values differ, as JSON pointers with both sides, for a readable report.

use serde_json::Value;

/// One difference: the path and what each side has there (`None`: absent).
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    pub path: String,
    pub real: Option<Value>,
    pub fake: Option<Value>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}\n      real: {}\n      fake: {}",
            self.path,
            show(self.real.as_ref()),
            show(self.fake.as_ref())
        )
    }
}

fn show(value: Option<&Value>) -> String {
    const MAX: usize = 600;
    let Some(value) = value else {
        return "<absent>".into();
    };
    let text = value.to_string();
    if text.len() <= MAX {
        return text;
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
}

/// The top-most paths at which `real` and `fake` differ: objects are compared key by key
/// and arrays element by element; anything else (including a type change) is one difference.
pub fn differences(real: &Value, fake: &Value) -> Vec<Difference> {
    let mut out = Vec::new();
    walk(String::new(), Some(real), Some(fake), &mut out);
    out
}

fn walk(path: String, real: Option<&Value>, fake: Option<&Value>, out: &mut Vec<Difference>) {
    match (real, fake) {
        (Some(Value::Object(r)), Some(Value::Object(f))) => {
            let mut keys: Vec<&String> = r.keys().chain(f.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                walk(
                    format!("{path}/{}", escape(key)),
                    r.get(key),
                    f.get(key),
                    out,
                );
            }
        }
        (Some(Value::Array(r)), Some(Value::Array(f))) => {
            for i in 0..r.len().max(f.len()) {
                walk(format!("{path}/{i}"), r.get(i), f.get(i), out);
            }
        }
        (r, f) if r == f => {}
        (r, f) => out.push(Difference {
            path: if path.is_empty() { "/".into() } else { path },
            real: r.cloned(),
            fake: f.cloned(),
        }),
    }
}

/// JSON pointer escaping (RFC 6901).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Whether `path` is `pattern` or lies under it; a `*` segment of the pattern matches any
/// one segment (`/body/items/*/metadata/managedFields`), and `/` covers everything.
pub fn covers(pattern: &str, path: &str) -> bool {
    if pattern == "/" {
        return true;
    }
    let mut path = path.split('/');
    pattern
        .split('/')
        .all(|want| path.next().is_some_and(|got| want == "*" || want == got))
}
