//! Validation of CustomResourceDefinitions, as
//! `apiextensions-apiserver/pkg/apis/apiextensions/validation` validates them (the common
//! mistakes): the name is `<plural>.<group>`, the group a DNS subdomain with a dot, a
//! supported scope, unique DNS-1035 version names with exactly one storage version and a
//! structural schema each, valid names, scale paths and printer columns, and on update the
//! group, plural (and once established, scope and kind) unchanged.

use serde_json::Value;

use super::super::status::FieldError;
use super::super::structural::{ProblemKind, Schema, SchemaProblem};
use super::super::validation::{
    DNS1035_LABEL, DNS1123_SUBDOMAIN, is_dns_subdomain, is_dns1035_label,
};
use crate::apiserver::str_at;

/// Every problem of a CRD about to be created (or, with `old`, to replace `old`).
pub(crate) fn validate(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = str_at(crd, "/metadata/name");
    let required_name = format!(
        "{}.{}",
        str_at(crd, "/spec/names/plural"),
        str_at(crd, "/spec/group")
    );
    if old.is_none() && name != required_name {
        errors.push(FieldError::invalid(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    spec(crd, &mut errors);
    names(
        &crd["status"]["acceptedNames"],
        "status.acceptedNames",
        &mut errors,
    );
    let stored: Vec<&str> = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if stored.is_empty() {
        errors.push(FieldError::invalid(
            "status.storedVersions",
            Value::Null,
            "must have at least one stored version",
        ));
    }
    if let Some(old) = old {
        update(crd, old, &stored, &mut errors);
    }
    errors
}

fn spec(crd: &Value, errors: &mut Vec<FieldError>) {
    let group = str_at(crd, "/spec/group");
    if group.is_empty() {
        errors.push(FieldError::required("spec.group", ""));
    } else if !is_dns_subdomain(group) {
        errors.push(FieldError::invalid("spec.group", group, DNS1123_SUBDOMAIN));
    } else if !group.contains('.') {
        errors.push(FieldError::invalid(
            "spec.group",
            group,
            "should be a domain with at least one dot",
        ));
    }
    match str_at(crd, "/spec/scope") {
        "" => errors.push(FieldError::required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => errors.push(FieldError::not_supported(
            "spec.scope",
            other,
            &["Cluster", "Namespaced"],
        )),
    }
    versions(crd, errors);
    let names_value = &crd["spec"]["names"];
    for key in ["plural", "singular", "kind", "listKind"] {
        if str_at(names_value, &format!("/{key}")).is_empty() {
            errors.push(FieldError::required(&format!("spec.names.{key}"), ""));
        }
    }
    names(names_value, "spec.names", errors);
}

fn versions(crd: &Value, errors: &mut Vec<FieldError>) {
    let Some(versions) = crd.pointer("/spec/versions").and_then(Value::as_array) else {
        errors.push(FieldError::required(
            "spec.versions",
            "must have at least one version",
        ));
        return;
    };
    let mut seen = Vec::new();
    let mut storage = 0;
    let mut unique = true;
    for (i, version) in versions.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        let name = str_at(version, "/name");
        if version["storage"] == true {
            storage += 1;
        }
        if seen.contains(&name) {
            unique = false;
        }
        seen.push(name);
        if !is_dns1035_label(name) {
            errors.push(FieldError::invalid(
                &format!("{path}.name"),
                name,
                DNS1035_LABEL,
            ));
        }
        match version.pointer("/schema/openAPIV3Schema") {
            None => errors.push(FieldError::required(
                &format!("{path}.schema.openAPIV3Schema"),
                "",
            )),
            Some(schema) => {
                let at = format!("{path}.schema.openAPIV3Schema");
                let mut problems = Vec::new();
                let parsed = Schema::parse(schema, &at, &mut problems);
                problems.retain(|p| p.field != format!("{at}.type"));
                if parsed.kind.is_empty() {
                    problems.insert(
                        0,
                        SchemaProblem {
                            field: format!("{at}.type"),
                            kind: ProblemKind::Required,
                            detail: "must not be empty at the root".into(),
                            value: None,
                        },
                    );
                } else if parsed.kind != "object" {
                    problems.insert(
                        0,
                        SchemaProblem {
                            field: format!("{at}.type"),
                            kind: ProblemKind::Invalid,
                            detail: "must be object at the root".into(),
                            value: Some(Value::String(parsed.kind.clone())),
                        },
                    );
                }
                errors.extend(problems.into_iter().map(problem));
            }
        }
        if let Some(scale) = version.pointer("/subresources/scale") {
            scale_paths(scale, &format!("{path}.subresources"), errors);
        }
        for (j, column) in version["additionalPrinterColumns"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let at = format!("{path}.additionalPrinterColumns[{j}]");
            if str_at(column, "/name").is_empty() {
                errors.push(FieldError::required(&format!("{at}.name"), ""));
            }
            match str_at(column, "/type") {
                "" => errors.push(FieldError::required(&format!("{at}.type"), "")),
                "integer" | "number" | "string" | "boolean" | "date" => {}
                other => errors.push(FieldError::not_supported(
                    &format!("{at}.type"),
                    other,
                    &["boolean", "date", "integer", "number", "string"],
                )),
            }
            if str_at(column, "/jsonPath").is_empty() {
                errors.push(FieldError::required(&format!("{at}.jsonPath"), ""));
            }
        }
    }
    if !unique {
        errors.push(FieldError::invalid(
            "spec.versions",
            Value::Array(versions.clone()),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errors.push(FieldError::invalid(
            "spec.versions",
            Value::Array(versions.clone()),
            "must have exactly one version marked as storage version",
        ));
    }
}

fn problem(p: SchemaProblem) -> FieldError {
    match p.kind {
        ProblemKind::Required => FieldError::required(&p.field, &p.detail),
        ProblemKind::Forbidden => FieldError::forbidden(&p.field, &p.detail),
        ProblemKind::Invalid => {
            FieldError::invalid(&p.field, p.value.unwrap_or(Value::Null), &p.detail)
        }
        ProblemKind::NotSupported => {
            let supported: Vec<String> = p
                .detail
                .trim_start_matches("supported values: ")
                .split(", ")
                .map(|s| s.trim_matches('"').to_string())
                .collect();
            let supported: Vec<&str> = supported.iter().map(String::as_str).collect();
            FieldError::not_supported(&p.field, p.value.unwrap_or(Value::Null), &supported)
        }
    }
}

fn scale_paths(scale: &Value, path: &str, errors: &mut Vec<FieldError>) {
    for (key, under, required) in [
        ("specReplicasPath", ".spec.", true),
        ("statusReplicasPath", ".status.", true),
        ("labelSelectorPath", ".status.", false),
    ] {
        let field = format!("{path}.scale.{key}");
        let value = str_at(scale, &format!("/{key}"));
        if value.is_empty() {
            if required {
                errors.push(FieldError::required(&field, ""));
            }
            continue;
        }
        if !value.starts_with('.') {
            errors.push(FieldError::invalid(
                &field,
                value,
                "must be a simple json path starting with .",
            ));
        } else if value[1..].split('.').any(str::is_empty) {
            errors.push(FieldError::invalid(
                &field,
                value,
                "must be a json path in the dot notation",
            ));
        } else if !(value.starts_with(under)
            || key == "labelSelectorPath" && value.starts_with(".spec."))
        {
            errors.push(FieldError::invalid(
                &field,
                value,
                &format!(
                    "should be a json path under {}",
                    under.trim_end_matches('.')
                ),
            ));
        }
    }
}

fn names(names: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let mixed_case = "may have mixed case, but should otherwise match: ";
    for key in ["plural", "singular"] {
        let value = str_at(names, &format!("/{key}"));
        if !value.is_empty() && !is_dns1035_label(value) {
            errors.push(FieldError::invalid(
                &format!("{path}.{key}"),
                value,
                DNS1035_LABEL,
            ));
        }
    }
    for key in ["kind", "listKind"] {
        let value = str_at(names, &format!("/{key}"));
        if !value.is_empty() && !is_dns1035_label(&value.to_ascii_lowercase()) {
            errors.push(FieldError::invalid(
                &format!("{path}.{key}"),
                value,
                &format!("{mixed_case}{DNS1035_LABEL}"),
            ));
        }
    }
    for key in ["shortNames", "categories"] {
        for (i, value) in names[key].as_array().into_iter().flatten().enumerate() {
            let value = value.as_str().unwrap_or("");
            if !is_dns1035_label(value) {
                errors.push(FieldError::invalid(
                    &format!("{path}.{key}[{i}]"),
                    value,
                    DNS1035_LABEL,
                ));
            }
        }
    }
    let kind = str_at(names, "/kind");
    if !kind.is_empty() && kind == str_at(names, "/listKind") {
        errors.push(FieldError::invalid(
            &format!("{path}.listKind"),
            kind,
            "kind and listKind may not be the same",
        ));
    }
}

fn update(crd: &Value, old: &Value, stored: &[&str], errors: &mut Vec<FieldError>) {
    let established = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        });
    let mut immutable = |pointer: &str, field: &str| {
        let (new, previous) = (str_at(crd, pointer), str_at(old, pointer));
        if new != previous {
            errors.push(FieldError::invalid(field, new, "field is immutable"));
        }
    };
    if established {
        immutable("/spec/scope", "spec.scope");
        immutable("/spec/names/kind", "spec.names.kind");
    }
    immutable("/spec/group", "spec.group");
    immutable("/spec/names/plural", "spec.names.plural");
    let versions: Vec<&str> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|v| v.iter().map(|v| str_at(v, "/name")).collect())
        .unwrap_or_default();
    for (i, version) in stored.iter().enumerate() {
        if !versions.contains(version) {
            errors.push(FieldError::invalid(
                &format!("status.storedVersions[{i}]"),
                *version,
                "must appear in spec.versions",
            ));
        }
    }
}
