//! The data of ConfigMaps and Secrets, as `ValidateConfigMap` and `ValidateSecret` check it
//! (`pkg/apis/core/validation`) on every create and update:
//!
//! | type | rule |
//! | --- | --- |
//! | ConfigMap, Secret | every key of `data` (and a ConfigMap's `binaryData`) is a config key (`[-._a-zA-Z0-9]+`, at most 253 characters, not `.`, `..` or starting with `..`); all values together hold at most 1 MiB |
//! | ConfigMap | no key in both `data` and `binaryData` |
//! | Secret | what its `type` needs: `kubernetes.io/service-account-token` the `kubernetes.io/service-account.name` annotation, `kubernetes.io/dockercfg` and `kubernetes.io/dockerconfigjson` their key holding a JSON object, `kubernetes.io/basic-auth` `username` or `password`, `kubernetes.io/ssh-auth` a non-empty `ssh-privatekey`, `kubernetes.io/tls` `tls.crt` and `tls.key` |
//!
//! Keys are checked in sorted order (Go walks the maps in random order). A malformed
//! `.dockercfg` is reported with `serde_json`'s description, not Go's.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value};

use crate::apiserver::status::FieldError;

/// `core.MaxSecretSize`: the most bytes a ConfigMap's or a Secret's values hold together.
const MAX_SIZE: usize = 1024 * 1024;
const CONFIG_KEY_MAX: usize = 253;
const CONFIG_KEY: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
const SERVICE_ACCOUNT_NAME: &str = "kubernetes.io/service-account.name";
const REDACTED: &str = "<secret contents redacted>";

/// `validation.IsConfigMapKey`: why `key` is not a config key (nothing when it is).
pub(crate) fn config_key_errors(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if key.len() > CONFIG_KEY_MAX {
        errors.push(format!("must be no more than {CONFIG_KEY_MAX} characters"));
    }
    let valid = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !valid {
        errors.push(CONFIG_KEY.to_string());
    }
    match key {
        "." => errors.push("must not be '.'".into()),
        ".." => errors.push("must not be '..'".into()),
        _ if key.starts_with("..") => errors.push("must not start with '..'".into()),
        _ => {}
    }
    errors
}

fn map_at<'a>(object: &'a Value, field: &str) -> Option<&'a Map<String, Value>> {
    object.get(field).and_then(Value::as_object)
}

fn key(field: &str, key: &str, errors: &mut Vec<FieldError>) {
    for message in config_key_errors(key) {
        errors.push(FieldError::invalid(
            &format!("{field}[{key}]"),
            key,
            &message,
        ));
    }
}

/// The decoded bytes of a Secret's or a ConfigMap's `binaryData` value (base64 in JSON).
fn decoded(value: &Value) -> Vec<u8> {
    value
        .as_str()
        .and_then(|text| BASE64.decode(text).ok())
        .unwrap_or_default()
}

/// `ValidateConfigMap`'s rules on `data` and `binaryData`.
pub(crate) fn config_map(object: &Value, errors: &mut Vec<FieldError>) {
    let data = map_at(object, "data");
    let binary = map_at(object, "binaryData");
    for (field, map, other, other_name) in [
        ("data", data, binary, "binaryData"),
        ("binaryData", binary, data, "data"),
    ] {
        for name in map.into_iter().flat_map(Map::keys) {
            key(field, name, errors);
            if other.is_some_and(|other| other.contains_key(name)) {
                errors.push(FieldError::invalid(
                    &format!("{field}[{name}]"),
                    name.as_str(),
                    &format!("duplicate of key present in {other_name}"),
                ));
            }
        }
    }
    let size: usize = data
        .into_iter()
        .flat_map(Map::values)
        .map(|v| v.as_str().map_or(0, str::len))
        .chain(
            binary
                .into_iter()
                .flat_map(Map::values)
                .map(|v| decoded(v).len()),
        )
        .sum();
    if size > MAX_SIZE {
        errors.push(FieldError::too_long("", MAX_SIZE));
    }
}

/// `ValidateSecret`'s rules on `data` and on what the Secret's `type` needs.
pub(crate) fn secret(object: &Value, errors: &mut Vec<FieldError>) {
    let data = map_at(object, "data");
    for name in data.into_iter().flat_map(Map::keys) {
        key("data", name, errors);
    }
    let size: usize = data
        .into_iter()
        .flat_map(Map::values)
        .map(|v| decoded(v).len())
        .sum();
    if size > MAX_SIZE {
        errors.push(FieldError::too_long("data", MAX_SIZE));
    }
    let has = |key: &str| data.is_some_and(|d| d.contains_key(key));
    let required = |key: &str| FieldError::required(&format!("data[{key}]"), "");
    match object.get("type").and_then(Value::as_str).unwrap_or("") {
        "kubernetes.io/service-account-token" => {
            let named = object
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(SERVICE_ACCOUNT_NAME))
                .and_then(Value::as_str)
                .is_some_and(|name| !name.is_empty());
            if !named {
                errors.push(FieldError::required(
                    &format!("metadata.annotations[{SERVICE_ACCOUNT_NAME}]"),
                    "",
                ));
            }
        }
        kind @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let key = if kind == "kubernetes.io/dockercfg" {
                ".dockercfg"
            } else {
                ".dockerconfigjson"
            };
            match data.and_then(|d| d.get(key)) {
                None => errors.push(required(key)),
                Some(value) => {
                    if let Some(why) = json_object_error(&decoded(value)) {
                        errors.push(FieldError::invalid(&format!("data[{key}]"), REDACTED, &why));
                    }
                }
            }
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errors.push(required("username"));
            errors.push(required("password"));
        }
        "kubernetes.io/ssh-auth" => {
            let key = data.and_then(|d| d.get("ssh-privatekey"));
            if key.is_none_or(|v| decoded(v).is_empty()) {
                errors.push(required("ssh-privatekey"));
            }
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    errors.push(required(key));
                }
            }
        }
        _ => {}
    }
}

/// Why `bytes` does not decode into Go's `map[string]interface{}` (`null` does).
fn json_object_error(bytes: &[u8]) -> Option<String> {
    // Go's scanner runs over the whole document first: its syntax errors, not serde's
    // (`invalid character 'o' in literal null (expecting 'u')`, `unexpected end of JSON input`).
    if let Some(why) = crate::apiserver::go_json::syntax_error(bytes) {
        return Some(why);
    }
    let first = bytes
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
    let kind = match first {
        Some(b'{' | b'n') | None => return None,
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "bool",
        Some(_) => "number",
    };
    Some(format!(
        "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
    ))
}

#[cfg(test)]
mod tests;
