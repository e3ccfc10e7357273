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
use super::schema_rules;
use crate::apiserver::go_json::{self, go_string};
use crate::apiserver::str_at;
use crate::apiserver::structural::cel_rules::go_rule_struct;
use crate::apiserver::validation::json_string_slice;

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
    if let Some(old) = old {
        update(crd, old, &mut errors);
    }
    errors.extend(validate_status(crd));
    stored_versions(crd, &mut errors);
    errors
}

/// The problems of a write through the `status` subresource
/// (`ValidateUpdateCustomResourceDefinitionStatus`): the accepted names only, so a status
/// write may set `storedVersions` to any list (a storage migrator trims it this way).
pub(crate) fn validate_status(crd: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    names(
        &crd["status"]["acceptedNames"],
        "status.acceptedNames",
        &mut errors,
    );
    errors
}

/// `ValidateCustomResourceDefinitionStoredVersions`: at least one stored version, the
/// storage version among them, and each of them still in `spec.versions`.
fn stored_versions(crd: &Value, errors: &mut Vec<FieldError>) {
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
        return;
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let names: Vec<&str> = versions.iter().map(|v| str_at(v, "/name")).collect();
    for version in versions {
        let name = str_at(version, "/name");
        if version["storage"] == true && !stored.contains(&name) {
            errors.push(FieldError::invalid(
                "status.storedVersions",
                Value::from(stored.clone()),
                &format!("must have the storage version {name}"),
            ));
        }
    }
    for (i, version) in stored.iter().enumerate() {
        if !names.contains(version) {
            errors.push(FieldError::invalid(
                &format!("status.storedVersions[{i}]"),
                *version,
                &format!(
                    "missing from spec.versions; {version} was previously a storage version, \
                     and must remain in spec.versions until a storage migration ensures no \
                     data remains persisted in {version} and removes {version} from \
                     status.storedVersions"
                ),
            ));
        }
    }
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
    conversion(crd, errors);
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
    // As upstream reads a v1 CRD, the versions' schemas, when all the same, are the CRD's
    // `spec.validation`, and their problems are reported there.
    let hoisted = versions
        .iter()
        .all(|v| v.pointer("/schema") == versions[0].pointer("/schema"));
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
            Some(_) if hoisted && i > 0 => {}
            Some(schema) => {
                let at = if hoisted {
                    "spec.validation.openAPIV3Schema".to_string()
                } else {
                    format!("{path}.schema.openAPIV3Schema")
                };
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
                let clean = problems.is_empty();
                errors.extend(problems.into_iter().map(problem));
                schema_rules::check(schema, &at, clean, errors);
            }
        }
        // Subresources, printer columns and selectable fields the same in every version
        // are the CRD's own too (reported under `spec.`, once), as for the schema.
        let at = |key: &str| {
            if versions.iter().all(|v| v.get(key) == versions[0].get(key)) {
                (i == 0).then(|| format!("spec.{key}"))
            } else {
                Some(format!("{path}.{key}"))
            }
        };
        if let Some(scale) = version.pointer("/subresources/scale")
            && let Some(subresources) = at("subresources")
        {
            scale_paths(scale, &subresources, errors);
        }
        if let Some(columns) = at("additionalPrinterColumns") {
            printer_columns(&version["additionalPrinterColumns"], &columns, errors);
        }
        if let Some(fields) = at("selectableFields") {
            selectable_fields(version, &fields, errors);
        }
        if let Some(warning) = version["deprecationWarning"].as_str() {
            deprecation_warning(warning, &format!("{path}.deprecationWarning"), errors);
        }
    }
    // The internal CRD's `spec.version` is the first version's name.
    if let Some(first) = versions.first().map(|v| str_at(v, "/name"))
        && !is_dns1035_label(first)
    {
        errors.push(FieldError::invalid("spec.version", first, DNS1035_LABEL));
    }
    if !unique {
        errors.push(FieldError::invalid_go(
            "spec.versions",
            &internal_versions(versions),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errors.push(FieldError::invalid_go(
            "spec.versions",
            &internal_versions(versions),
            "must have exactly one version marked as storage version",
        ));
    }
}

/// `additionalPrinterColumns` (`ValidateCustomResourceColumn`).
fn printer_columns(columns: &Value, path: &str, errors: &mut Vec<FieldError>) {
    const TYPES: &str = "boolean,date,integer,number,string";
    const FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
    for (j, column) in columns.as_array().into_iter().flatten().enumerate() {
        let at = format!("{path}[{j}]");
        if str_at(column, "/name").is_empty() {
            errors.push(FieldError::required(&format!("{at}.name"), ""));
        }
        match str_at(column, "/type") {
            "" => errors.push(FieldError::required(&format!("{at}.type"), "")),
            t if TYPES.split(',').any(|known| known == t) => {}
            other => errors.push(FieldError::invalid(
                &format!("{at}.type"),
                other,
                &format!("must be one of {TYPES}"),
            )),
        }
        match str_at(column, "/format") {
            "" => {}
            f if FORMATS.split(',').any(|known| known == f) => {}
            other => errors.push(FieldError::invalid(
                &format!("{at}.format"),
                other,
                &format!("must be one of {FORMATS}"),
            )),
        }
        match str_at(column, "/jsonPath") {
            "" => errors.push(FieldError::required(&format!("{at}.JSONPath"), "")),
            p if !p.starts_with('.') => errors.push(FieldError::invalid(
                &format!("{at}.JSONPath"),
                p,
                "must be a simple json path starting with .",
            )),
            _ => {}
        }
    }
}

/// `selectableFields` (`validateSelectableFields`): at most 8, unique, simple paths to a
/// string, boolean or integer field of the schema, not under `metadata`.
fn selectable_fields(version: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let Some(fields) = version["selectableFields"].as_array() else {
        return;
    };
    if fields.len() > 8 {
        errors.push(FieldError {
            kind: super::super::status::FieldErrorKind::TooMany,
            field: path.to_string(),
            value: Some(Value::from(fields.len())),
            detail: "must have at most 8 items".into(),
        });
        return;
    }
    let schema = version.pointer("/schema/openAPIV3Schema");
    let mut seen = Vec::new();
    for (i, field) in fields.iter().enumerate() {
        let at = format!("{path}[{i}].jsonPath");
        let json_path = str_at(field, "/jsonPath");
        if json_path.is_empty() {
            errors.push(FieldError::required(&at, ""));
            continue;
        }
        let Some(rest) = json_path.strip_prefix('.') else {
            let got = json_path.split(['.', '[']).next().unwrap_or("");
            errors.push(FieldError::invalid(
                &at,
                json_path,
                &format!("is an invalid path: expected [ or . but got: {got}"),
            ));
            continue;
        };
        if seen.contains(&json_path) {
            errors.push(FieldError {
                kind: super::super::status::FieldErrorKind::Duplicate,
                field: at,
                value: Some(Value::from(json_path)),
                detail: String::new(),
            });
            continue;
        }
        seen.push(json_path);
        let mut node = schema;
        for (depth, part) in rest.split('.').enumerate() {
            node = match node {
                Some(n) if !(depth == 0 && part == "metadata") => n.pointer(&format!(
                    "/properties/{}",
                    part.replace('~', "~0").replace('/', "~1")
                )),
                _ => None,
            };
        }
        match node.map(|n| str_at(n, "/type")) {
            None => errors.push(FieldError::invalid(
                &at,
                json_path,
                "is an invalid path: does not refer to a valid field",
            )),
            Some("string" | "boolean" | "integer") => {}
            Some(_) => errors.push(FieldError::invalid(
                &at,
                json_path,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            )),
        }
    }
}

/// A version's `deprecationWarning`: at most 256 characters, all printable.
fn deprecation_warning(warning: &str, path: &str, errors: &mut Vec<FieldError>) {
    if warning.chars().count() > 256 {
        errors.push(FieldError::invalid(
            path,
            warning,
            "must be <= 256 characters long",
        ));
    } else if let Some((index, _)) = warning.char_indices().find(|(_, c)| c.is_control()) {
        // The field is a `*string`: Go prints the value as JSON (`"bad\u0001"`), not `%q`.
        errors.push(FieldError::invalid_go(
            path,
            &super::super::go_json::go_string(warning),
            &format!(
                "must only contain printable UTF-8 characters; non-printable character found at index {index}"
            ),
        ));
    }
}

/// `spec.preserveUnknownFields` (refused in v1) and `spec.conversion`.
fn conversion(crd: &Value, errors: &mut Vec<FieldError>) {
    if crd.pointer("/spec/preserveUnknownFields") == Some(&Value::Bool(true)) {
        errors.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            true,
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    let Some(conversion) = crd.pointer("/spec/conversion") else {
        return;
    };
    let webhook = conversion.pointer("/webhook/clientConfig").is_some();
    let review_versions = conversion
        .pointer("/webhook/conversionReviewVersions")
        .and_then(Value::as_array)
        .is_some_and(|v| !v.is_empty());
    match str_at(conversion, "/strategy") {
        "Webhook" => {
            if !webhook {
                errors.push(FieldError::required(
                    "spec.conversion.webhookClientConfig",
                    "required when strategy is set to Webhook",
                ));
            }
            if !review_versions {
                errors.push(FieldError::required(
                    "spec.conversion.conversionReviewVersions",
                    "",
                ));
            }
        }
        "None" | "" => {
            if webhook {
                errors.push(FieldError::forbidden(
                    "spec.conversion.webhookClientConfig",
                    "should not be set when strategy is not set to Webhook",
                ));
            }
            if review_versions {
                errors.push(FieldError::forbidden(
                    "spec.conversion.conversionReviewVersions",
                    "should not be set when strategy is not set to Webhook",
                ));
            }
        }
        other => errors.push(FieldError::not_supported(
            "spec.conversion.strategy",
            other,
            &["None", "Webhook"],
        )),
    }
}

fn problem(p: SchemaProblem) -> FieldError {
    match p.kind {
        ProblemKind::Required => FieldError::required(&p.field, &p.detail),
        ProblemKind::Forbidden => FieldError::forbidden(&p.field, &p.detail),
        ProblemKind::Invalid => {
            FieldError::invalid(&p.field, p.value.unwrap_or(Value::Null), &p.detail)
        }
        ProblemKind::InvalidShownAsIs => FieldError::invalid_go(
            &p.field,
            p.value.as_ref().and_then(Value::as_str).unwrap_or("null"),
            &p.detail,
        ),
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

fn update(crd: &Value, old: &Value, errors: &mut Vec<FieldError>) {
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
}

// ---------------------------------------------------------------------------------------
// The internal types as `field.Error` prints them
// ---------------------------------------------------------------------------------------

/// `spec.versions` as `field.Error` prints it: `json.Marshal` of the internal
/// `[]apiextensions.CustomResourceDefinitionVersion`, which has no JSON tags (Go's field
/// names, every field, `null` for what is unset). The conversion from v1 moves a schema,
/// subresources, printer columns and selectable fields that every version shares up to the
/// spec, so those are `null` in each version then.
fn internal_versions(versions: &[Value]) -> String {
    let set = |version: &Value, key: &str| version.get(key).filter(|v| !v.is_null()).cloned();
    let shared = |key: &str| {
        versions
            .iter()
            .all(|v| set(v, key) == set(&versions[0], key))
    };
    let items: Vec<String> = versions
        .iter()
        .map(|version| {
            let own = |key: &str, write: fn(&Value) -> String| match set(version, key) {
                Some(value) if !shared(key) => write(&value),
                _ => "null".to_string(),
            };
            format!(
                "{{\"Name\":{},\"Served\":{},\"Storage\":{},\"Deprecated\":{},\"DeprecationWarning\":{},\"Schema\":{},\"Subresources\":{},\"AdditionalPrinterColumns\":{},\"SelectableFields\":{}}}",
                go_string(str_at(version, "/name")),
                version["served"] == true,
                version["storage"] == true,
                version["deprecated"] == true,
                write_go(Go::StrPtr, version.get("deprecationWarning")),
                own("schema", |schema| format!(
                    "{{\"OpenAPIV3Schema\":{}}}",
                    write_go(Go::Props, schema.get("openAPIV3Schema"))
                )),
                own("subresources", internal_subresources),
                own("additionalPrinterColumns", |columns| go_list(columns, internal_column)),
                own("selectableFields", |fields| go_list(fields, |field| {
                    format!("{{\"JSONPath\":{}}}", go_string(str_at(field, "/jsonPath")))
                })),
            )
        })
        .collect();
    format!("[{}]", items.join(","))
}

/// The internal `CustomResourceColumnDefinition`.
fn internal_column(column: &Value) -> String {
    let text = |pointer: &str| go_string(str_at(column, pointer));
    format!(
        "{{\"Name\":{},\"Type\":{},\"Format\":{},\"Description\":{},\"Priority\":{},\"JSONPath\":{}}}",
        text("/name"),
        text("/type"),
        text("/format"),
        text("/description"),
        column["priority"].as_i64().unwrap_or(0),
        text("/jsonPath"),
    )
}

/// The internal `CustomResourceSubresources`: `Status` an empty struct, `Scale` its paths.
fn internal_subresources(subresources: &Value) -> String {
    let status = match subresources.get("status") {
        Some(v) if !v.is_null() => "{}",
        _ => "null",
    };
    let scale = match subresources.get("scale") {
        Some(scale) if !scale.is_null() => format!(
            "{{\"SpecReplicasPath\":{},\"StatusReplicasPath\":{},\"LabelSelectorPath\":{}}}",
            go_string(str_at(scale, "/specReplicasPath")),
            go_string(str_at(scale, "/statusReplicasPath")),
            write_go(Go::StrPtr, scale.get("labelSelectorPath")),
        ),
        _ => "null".to_string(),
    };
    format!("{{\"Status\":{status},\"Scale\":{scale}}}")
}

/// A JSON array as a Go slice of `item`s, `[]` kept (an empty slice is not nil).
fn go_list(items: &Value, item: impl Fn(&Value) -> String) -> String {
    let items: Vec<String> = items.as_array().into_iter().flatten().map(item).collect();
    format!("[{}]", items.join(","))
}

/// The Go type of a field of the internal `JSONSchemaProps` (and of what it holds).
#[derive(Clone, Copy)]
enum Go {
    Str,
    Bool,
    StrPtr,
    BoolPtr,
    Float,
    Int,
    /// `*JSON` (an `interface{}`).
    Json,
    Jsons,
    Strings,
    /// `*JSONSchemaProps`.
    Props,
    PropsList,
    PropsMap,
    /// `*JSONSchemaPropsOrArray`.
    OrArray,
    /// `*JSONSchemaPropsOrBool`.
    OrBool,
    /// `JSONSchemaDependencies`.
    Dependencies,
    /// `*ExternalDocumentation`.
    Docs,
    /// `ValidationRules`.
    Rules,
}

/// The internal `JSONSchemaProps`' fields in their order: Go name, v1 JSON name, type.
const SCHEMA_FIELDS: &[(&str, &str, Go)] = &[
    ("ID", "id", Go::Str),
    ("Schema", "$schema", Go::Str),
    ("Ref", "$ref", Go::StrPtr),
    ("Description", "description", Go::Str),
    ("Type", "type", Go::Str),
    ("Nullable", "nullable", Go::Bool),
    ("Format", "format", Go::Str),
    ("Title", "title", Go::Str),
    ("Default", "default", Go::Json),
    ("Maximum", "maximum", Go::Float),
    ("ExclusiveMaximum", "exclusiveMaximum", Go::Bool),
    ("Minimum", "minimum", Go::Float),
    ("ExclusiveMinimum", "exclusiveMinimum", Go::Bool),
    ("MaxLength", "maxLength", Go::Int),
    ("MinLength", "minLength", Go::Int),
    ("Pattern", "pattern", Go::Str),
    ("MaxItems", "maxItems", Go::Int),
    ("MinItems", "minItems", Go::Int),
    ("UniqueItems", "uniqueItems", Go::Bool),
    ("MultipleOf", "multipleOf", Go::Float),
    ("Enum", "enum", Go::Jsons),
    ("MaxProperties", "maxProperties", Go::Int),
    ("MinProperties", "minProperties", Go::Int),
    ("Required", "required", Go::Strings),
    ("Items", "items", Go::OrArray),
    ("AllOf", "allOf", Go::PropsList),
    ("OneOf", "oneOf", Go::PropsList),
    ("AnyOf", "anyOf", Go::PropsList),
    ("Not", "not", Go::Props),
    ("Properties", "properties", Go::PropsMap),
    ("AdditionalProperties", "additionalProperties", Go::OrBool),
    ("PatternProperties", "patternProperties", Go::PropsMap),
    ("Dependencies", "dependencies", Go::Dependencies),
    ("AdditionalItems", "additionalItems", Go::OrBool),
    ("Definitions", "definitions", Go::PropsMap),
    ("ExternalDocs", "externalDocs", Go::Docs),
    ("Example", "example", Go::Json),
    (
        "XPreserveUnknownFields",
        "x-kubernetes-preserve-unknown-fields",
        Go::BoolPtr,
    ),
    (
        "XEmbeddedResource",
        "x-kubernetes-embedded-resource",
        Go::Bool,
    ),
    ("XIntOrString", "x-kubernetes-int-or-string", Go::Bool),
    ("XListMapKeys", "x-kubernetes-list-map-keys", Go::Strings),
    ("XListType", "x-kubernetes-list-type", Go::StrPtr),
    ("XMapType", "x-kubernetes-map-type", Go::StrPtr),
    ("XValidations", "x-kubernetes-validations", Go::Rules),
];

/// `json.Marshal` of a value of Go type `go` converted from the v1 JSON `value` (`None` or
/// `null`: unset, the type's zero).
fn write_go(go: Go, value: Option<&Value>) -> String {
    let value = value.filter(|v| !v.is_null());
    let text = |v: &Value| go_string(v.as_str().unwrap_or(""));
    let Some(value) = value else {
        return match go {
            Go::Str => "\"\"".to_string(),
            Go::Bool => "false".to_string(),
            _ => "null".to_string(),
        };
    };
    match go {
        Go::Str | Go::StrPtr => text(value),
        Go::Bool | Go::BoolPtr => (value == true).to_string(),
        Go::Float => go_json::float(value.as_f64().unwrap_or(0.0)),
        Go::Int => value.as_i64().unwrap_or(0).to_string(),
        Go::Json => go_json::marshal(value),
        Go::Jsons => go_list(value, go_json::marshal),
        Go::Strings => json_string_slice(
            value
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| v.as_str().unwrap_or("")),
        ),
        Go::Props => {
            let fields: Vec<String> = SCHEMA_FIELDS
                .iter()
                .map(|(name, key, go)| format!("\"{name}\":{}", write_go(*go, value.get(*key))))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Go::PropsList => go_list(value, |v| write_go(Go::Props, Some(v))),
        Go::PropsMap => match value.as_object() {
            Some(map) => go_json::map_with(map, |v| write_go(Go::Props, Some(v))),
            None => "null".to_string(),
        },
        Go::OrArray if value.is_array() => format!(
            "{{\"Schema\":null,\"JSONSchemas\":{}}}",
            write_go(Go::PropsList, Some(value))
        ),
        Go::OrArray => format!(
            "{{\"Schema\":{},\"JSONSchemas\":null}}",
            write_go(Go::Props, Some(value))
        ),
        Go::OrBool => match value.as_bool() {
            Some(allows) => format!("{{\"Allows\":{allows},\"Schema\":null}}"),
            None => format!(
                "{{\"Allows\":true,\"Schema\":{}}}",
                write_go(Go::Props, Some(value))
            ),
        },
        Go::Dependencies => match value.as_object() {
            Some(map) => go_json::map_with(map, |v| {
                if v.is_array() {
                    format!(
                        "{{\"Schema\":null,\"Property\":{}}}",
                        write_go(Go::Strings, Some(v))
                    )
                } else {
                    format!(
                        "{{\"Schema\":{},\"Property\":null}}",
                        write_go(Go::Props, Some(v))
                    )
                }
            }),
            None => "null".to_string(),
        },
        Go::Docs => format!(
            "{{\"Description\":{},\"URL\":{}}}",
            go_string(str_at(value, "/description")),
            go_string(str_at(value, "/url")),
        ),
        Go::Rules => go_list(value, |rule| {
            go_rule_struct(rule).as_str().unwrap_or("null").to_string()
        }),
    }
}
