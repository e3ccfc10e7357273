//! What legitimately differs between two API servers' answers to the same requests, and how
//! it is taken out before comparing:
//!
//! - `uid`s become `uid(<namespace>/<name>)` (numbered if a name is reused), also where a
//!   message quotes them;
//! - timestamps (`creationTimestamp`, `deletionTimestamp`, managed fields' `time`,
//!   conditions' `lastTransitionTime`) become `<time>`;
//! - resource versions become their place in the run: `@<step>` for the version a write
//!   step produced, `after @<step>` for one between that write and the next, `before any
//!   write`, or `0`. Their order is compared, not their digits (an etcd revision and the fake's
//!   counter count different things). Numbers in messages about resource versions get the
//!   same treatment, but for the oldest version a "too old resource version" message says
//!   the server keeps, which depends on its watch cache's start, not on the request;
//! - continue tokens become `<continue token>` (their encoding is the server's business;
//!   whether they work is what the paging steps check);
//! - generated names keep their `generateName` prefix and lose the random suffix;
//! - `managedFields` entries are sorted by operation, manager, API version and subresource:
//!   the servers order them by their times (in whole seconds) first, and two writes a
//!   second apart on one server may share a second on the other;
//! - a discovery document's resources are sorted by name: the real server lists the types
//!   of several CRDs of a group in the order its CRD cache hands them out, which varies.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};

/// Per server: the uids seen and the resource versions each write step produced.
#[derive(Default)]
pub struct Normalizer {
    uids: HashMap<String, String>,
    uid_names: HashMap<String, usize>,
    writes: BTreeMap<u64, String>,
}

const TIME_KEYS: [&str; 4] = [
    "creationTimestamp",
    "deletionTimestamp",
    "time",
    "lastTransitionTime",
];

impl Normalizer {
    /// Records a resource version a successful write step produced (the first step to
    /// produce one names it).
    pub fn register_write(&mut self, step: &str, rv: &Value) {
        let rv = rv.as_str().and_then(|v| v.parse::<u64>().ok());
        if let Some(rv) = rv {
            self.writes.entry(rv).or_insert_with(|| step.to_string());
        }
    }

    /// Learns the uids in `value` (named after the object that carries them).
    pub fn learn_uids(&mut self, value: &Value) {
        match value {
            Value::Object(map) => {
                if let Some(Value::Object(meta)) = map.get("metadata")
                    && let Some(Value::String(uid)) = meta.get("uid")
                    && !self.uids.contains_key(uid)
                {
                    let name = format!(
                        "{}/{}",
                        meta.get("namespace").and_then(Value::as_str).unwrap_or(""),
                        generated_name(meta)
                            .or_else(|| meta
                                .get("name")
                                .and_then(Value::as_str)
                                .map(str::to_string))
                            .unwrap_or_default()
                    );
                    let seen = self.uid_names.entry(name.clone()).or_default();
                    *seen += 1;
                    let label = if *seen == 1 {
                        format!("uid({name})")
                    } else {
                        format!("uid({name})#{seen}")
                    };
                    self.uids.insert(uid.clone(), label);
                }
                map.values().for_each(|v| self.learn_uids(v));
            }
            Value::Array(items) => items.iter().for_each(|v| self.learn_uids(v)),
            _ => {}
        }
    }

    /// The place of resource version `rv` in the run.
    pub fn rv_label(&self, rv: &str) -> String {
        let Ok(n) = rv.parse::<u64>() else {
            return format!("invalid {rv:?}");
        };
        if n == 0 {
            return "0".into();
        }
        match self.writes.range(..=n).next_back() {
            Some((at, step)) if *at == n => format!("@{step}"),
            Some((_, step)) => format!("after @{step}"),
            None => "before any write".into(),
        }
    }

    /// `value` with everything that legitimately differs replaced (see the module docs).
    pub fn normalize(&self, value: &Value) -> Value {
        self.walk(None, value)
    }

    fn walk(&self, key: Option<&str>, value: &Value) -> Value {
        match value {
            Value::Object(map) => self.object(map),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.walk(None, v)).collect()),
            Value::String(s) => match key {
                Some(k) if TIME_KEYS.contains(&k) => Value::String("<time>".into()),
                Some("resourceVersion") => Value::String(self.rv_label(s)),
                Some("continue") if !s.is_empty() => Value::String("<continue token>".into()),
                Some("uid") => Value::String(
                    self.uids
                        .get(s)
                        .cloned()
                        .unwrap_or_else(|| "uid(unknown)".into()),
                ),
                _ => Value::String(self.text(s)),
            },
            other => other.clone(),
        }
    }

    fn object(&self, map: &Map<String, Value>) -> Value {
        let mut out: Map<String, Value> = map
            .iter()
            .map(|(k, v)| (k.clone(), self.walk(Some(k), v)))
            .collect();
        if let Some(Value::Array(entries)) = out.get_mut("managedFields") {
            let key = |e: &Value| {
                ["operation", "manager", "apiVersion", "subresource"]
                    .map(|k| e[k].as_str().unwrap_or("").to_string())
            };
            entries.sort_by_key(key);
        }
        // Discovery (`APIResourceList` names its resources by `name`, aggregated discovery
        // by `resource`).
        let listing = out.get("kind").and_then(Value::as_str) == Some("APIResourceList");
        if let Some(Value::Array(resources)) = out.get_mut("resources") {
            if listing {
                resources.sort_by_key(|r| r["name"].as_str().unwrap_or("").to_string());
            } else if resources.iter().all(|r| r["resource"].is_string()) {
                resources.sort_by_key(|r| r["resource"].as_str().unwrap_or("").to_string());
            }
        }
        if let Some(name) = generated_name(map) {
            out.insert("name".into(), Value::String(name));
        }
        Value::Object(out)
    }

    /// Free text: known uids, and the numbers of messages about resource versions.
    fn text(&self, s: &str) -> String {
        let mut text = s.to_string();
        for (uid, label) in &self.uids {
            if text.contains(uid.as_str()) {
                text = text.replace(uid.as_str(), label);
            }
        }
        if let Some(rest) = text.strip_prefix("too old resource version: ")
            && let Some((requested, _oldest)) = rest.split_once(" (")
        {
            // The oldest version a server still keeps depends on when its watch cache
            // started and how much it holds, not on the request: only the requested one is
            // compared.
            return format!(
                "too old resource version: {} (<oldest kept>)",
                self.replace_numbers(requested)
            );
        }
        if text.to_ascii_lowercase().contains("resource version") {
            text = self.replace_numbers(&text);
        }
        text
    }

    fn replace_numbers(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut digits = String::new();
        for c in text.chars().chain(std::iter::once('\0')) {
            if c.is_ascii_digit() {
                digits.push(c);
                continue;
            }
            if !digits.is_empty() {
                out.push('<');
                out.push_str(&self.rv_label(&digits));
                out.push('>');
                digits.clear();
            }
            if c != '\0' {
                out.push(c);
            }
        }
        out
    }
}

/// A generated name (metadata with `generateName` and a `name` that extends it) as
/// `<prefix><random>`.
fn generated_name(meta: &Map<String, Value>) -> Option<String> {
    let prefix = meta.get("generateName")?.as_str()?;
    let name = meta.get("name")?.as_str()?;
    (name.starts_with(prefix) && name.len() > prefix.len()).then(|| format!("{prefix}<random>"))
}
