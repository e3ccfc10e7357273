//! The admission configurations of `admissionregistration.k8s.io/v1`, as
//! `pkg/apis/admissionregistration/validation` checks them on every create and update. The
//! server stores them and never calls a webhook nor evaluates a policy, but it refuses what
//! kube-apiserver refuses, so that a manifest with a mistake fails here as it would in a
//! cluster:
//!
//! | kind | rule |
//! | --- | --- |
//! | Validating-, MutatingWebhookConfiguration | each webhook's `name` a fully qualified domain name (at least three segments) and unique; `sideEffects` given and `None` or `NoneOnDryRun`; `admissionReviewVersions` given, without repeats, holding `v1` or `v1beta1`; `timeoutSeconds` from 1 to 30; `failurePolicy`, `matchPolicy`, `reinvocationPolicy` and the rules' `operations` and `scope` from their supported values; match conditions named (qualified names), unique, with an expression, at most 64; each rule's operations, API groups, versions and resources given; exactly one of `clientConfig.url` (https, with a host, no user, query or fragment) and `clientConfig.service` (name, namespace, a path starting with `/`, a port from 1 to 65535) |
//! | ValidatingAdmissionPolicy | `failurePolicy` supported; `matchConstraints` given; match conditions as a webhook's; at least one of `validations` and `auditAnnotations`; each validation's `expression` given |
//! | all | label selectors (`namespaceSelector`, `objectSelector`, a `paramRef`'s) as `ValidateLabelSelector` checks them |
//! | ValidatingAdmissionPolicyBinding | `policyName` given, a DNS subdomain; `validationActions` given, unique, from `Deny`, `Warn`, `Audit`, and not both `Deny` and `Warn`; a `paramRef` with `name` or `selector` (not both) and a `parameterNotFoundAction` |
//!
//! CEL expressions (match conditions, validations, audit annotations) are not compiled.

use serde_json::Value;

use crate::apiserver::status::FieldError;
use crate::apiserver::str_at;
use crate::apiserver::validation::{
    DNS1035_LABEL, is_dns_subdomain, is_dns1035_label, label_selector, qualified_name,
};

const FAILURE_POLICIES: [&str; 2] = ["Fail", "Ignore"];
const MATCH_POLICIES: [&str; 2] = ["Equivalent", "Exact"];
/// What a v1 webhook may declare (`Some` and `Unknown` were v1beta1's).
const SIDE_EFFECTS: [&str; 2] = ["None", "NoneOnDryRun"];
const REINVOCATION_POLICIES: [&str; 2] = ["IfNeeded", "Never"];
const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const SCOPES: [&str; 3] = ["*", "Cluster", "Namespaced"];
const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];
const VALIDATION_ACTIONS: [&str; 3] = ["Audit", "Deny", "Warn"];
const URL_FORM: &str = "; desired format: https://host[/path]";

/// Checks `object`, an admission configuration of `kind`.
pub(crate) fn validate(kind: &str, object: &Value, errors: &mut Vec<FieldError>) {
    match kind {
        "ValidatingWebhookConfiguration" => webhooks(object, false, errors),
        "MutatingWebhookConfiguration" => webhooks(object, true, errors),
        "ValidatingAdmissionPolicy" => policy(object.get("spec"), errors),
        "ValidatingAdmissionPolicyBinding" => binding(object.get("spec"), errors),
        _ => {}
    }
}

fn text<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str)
}

fn strings(value: Option<&Value>) -> Vec<&str> {
    value
        .and_then(Value::as_array)
        .map(|items| items.iter().map(|i| i.as_str().unwrap_or("")).collect())
        .unwrap_or_default()
}

/// `field.NotSupported` when the value at `key` is given and not one of `supported`.
fn one_of(object: &Value, key: &str, path: &str, supported: &[&str], errors: &mut Vec<FieldError>) {
    if let Some(value) = text(object, key)
        && !supported.contains(&value)
    {
        errors.push(FieldError::not_supported(
            &format!("{path}.{key}"),
            value,
            supported,
        ));
    }
}

fn webhooks(object: &Value, mutating: bool, errors: &mut Vec<FieldError>) {
    let hooks = object
        .get("webhooks")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut names = Vec::new();
    for (i, hook) in hooks.iter().enumerate() {
        let path = format!("webhooks[{i}]");
        let name = str_at(hook, "/name");
        fully_qualified_name(&format!("{path}.name"), name, errors);
        for (j, rule) in hook
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            rule_with_operations(rule, &format!("{path}.rules[{j}]"), errors);
        }
        one_of(hook, "failurePolicy", &path, &FAILURE_POLICIES, errors);
        one_of(hook, "matchPolicy", &path, &MATCH_POLICIES, errors);
        selectors(hook, &path, errors);
        match text(hook, "sideEffects") {
            None => errors.push(FieldError::required(
                &format!("{path}.sideEffects"),
                &format!("must specify one of {}", SIDE_EFFECTS.join(", ")),
            )),
            Some(_) => one_of(hook, "sideEffects", &path, &SIDE_EFFECTS, errors),
        }
        if let Some(timeout) = hook.get("timeoutSeconds").and_then(Value::as_i64)
            && !(1..=30).contains(&timeout)
        {
            errors.push(FieldError::invalid(
                &format!("{path}.timeoutSeconds"),
                timeout,
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
        if mutating {
            one_of(
                hook,
                "reinvocationPolicy",
                &path,
                &REINVOCATION_POLICIES,
                errors,
            );
        }
        client_config(
            hook.get("clientConfig"),
            &format!("{path}.clientConfig"),
            errors,
        );
        match_conditions(
            hook.get("matchConditions"),
            &format!("{path}.matchConditions"),
            errors,
        );
        review_versions(
            hook.get("admissionReviewVersions"),
            &format!("{path}.admissionReviewVersions"),
            errors,
        );
        if !name.is_empty() {
            if names.contains(&name) {
                errors.push(FieldError::duplicate(&format!("{path}.name"), name));
            } else {
                names.push(name);
            }
        }
    }
}

/// `utilvalidation.IsFullyQualifiedName`: a DNS subdomain of at least three segments (a
/// trailing dot allowed).
fn fully_qualified_name(path: &str, name: &str, errors: &mut Vec<FieldError>) {
    if name.is_empty() {
        errors.push(FieldError::required(path, ""));
        return;
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    if !is_dns_subdomain(name) {
        errors.push(FieldError::invalid(path, name, super::DNS1123_SUBDOMAIN));
    } else if name.split('.').count() < 3 {
        errors.push(FieldError::invalid(
            path,
            name,
            "should be a domain with at least three segments separated by dots",
        ));
    }
}

/// `validateRuleWithOperations` and `validateRule` (subresources allowed).
fn rule_with_operations(rule: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let operations = strings(rule.get("operations"));
    if operations.is_empty() {
        errors.push(FieldError::required(&format!("{path}.operations"), ""));
    }
    if operations.len() > 1 && operations.contains(&"*") {
        errors.push(FieldError::invalid(
            &format!("{path}.operations"),
            rule["operations"].clone(),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, operation) in operations.iter().enumerate() {
        if !OPERATIONS.contains(operation) {
            errors.push(FieldError::not_supported(
                &format!("{path}.operations[{i}]"),
                *operation,
                &OPERATIONS,
            ));
        }
    }
    rule_fields(rule, path, errors);
}

/// `validateRule`: groups, versions and resources given, `*` alone, a supported scope.
fn rule_fields(rule: &Value, path: &str, errors: &mut Vec<FieldError>) {
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let items = strings(rule.get(key));
        if items.is_empty() {
            errors.push(FieldError::required(&format!("{path}.{key}"), ""));
        }
        if items.len() > 1 && items.contains(&"*") {
            errors.push(FieldError::invalid(
                &format!("{path}.{key}"),
                rule[key].clone(),
                &format!("if '*' is present, must not specify other {what}"),
            ));
        }
        if key == "apiVersions" {
            for (i, _) in items.iter().enumerate().filter(|(_, v)| v.is_empty()) {
                errors.push(FieldError::required(&format!("{path}.{key}[{i}]"), ""));
            }
        }
    }
    let resources = strings(rule.get("resources"));
    if resources.is_empty() {
        errors.push(FieldError::required(&format!("{path}.resources"), ""));
    }
    for (i, _) in resources.iter().enumerate().filter(|(_, r)| r.is_empty()) {
        errors.push(FieldError::required(&format!("{path}.resources[{i}]"), ""));
    }
    if resources.len() > 1 && resources.contains(&"*/*") {
        errors.push(FieldError::invalid(
            &format!("{path}.resources"),
            rule["resources"].clone(),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    let plain = resources
        .iter()
        .any(|r| !r.contains('/') && *r != "*" && !r.is_empty());
    if resources.contains(&"*") && plain {
        errors.push(FieldError::invalid(
            &format!("{path}.resources"),
            rule["resources"].clone(),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    one_of(rule, "scope", path, &SCOPES, errors);
}

/// `validateAdmissionReviewVersions`, requiring a version the server understands.
fn review_versions(versions: Option<&Value>, path: &str, errors: &mut Vec<FieldError>) {
    let items = strings(versions);
    if items.is_empty() {
        errors.push(FieldError::required(
            path,
            &format!("must specify one of {}", REVIEW_VERSIONS.join(", ")),
        ));
        return;
    }
    let mut seen = Vec::new();
    for (i, version) in items.iter().enumerate() {
        if seen.contains(version) {
            errors.push(FieldError::invalid(
                &format!("{path}[{i}]"),
                *version,
                "duplicate version",
            ));
            continue;
        }
        seen.push(version);
        if !is_dns1035_label(version) {
            errors.push(FieldError::invalid(
                &format!("{path}[{i}]"),
                *version,
                DNS1035_LABEL,
            ));
        }
    }
    if !items.iter().any(|v| REVIEW_VERSIONS.contains(v)) {
        errors.push(FieldError::invalid(
            path,
            versions.cloned().unwrap_or(Value::Null),
            &format!(
                "must include at least one of {}",
                REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
}

/// Exactly one of `url` and `service`, each as `webhook.ValidateWebhookURL` and
/// `ValidateWebhookService` check it.
fn client_config(config: Option<&Value>, path: &str, errors: &mut Vec<FieldError>) {
    let config = config.unwrap_or(&Value::Null);
    let url = config.get("url").filter(|v| !v.is_null());
    let service = config.get("service").filter(|v| !v.is_null());
    match (url, service) {
        (Some(url), None) => {
            webhook_url(url.as_str().unwrap_or(""), &format!("{path}.url"), errors)
        }
        (None, Some(service)) => webhook_service(service, &format!("{path}.service"), errors),
        _ => errors.push(FieldError::required(
            path,
            "exactly one of url or service is required",
        )),
    }
}

fn webhook_url(url: &str, path: &str, errors: &mut Vec<FieldError>) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    if scheme != "https" {
        errors.push(FieldError::invalid(
            path,
            scheme,
            &format!("'https' is the only allowed URL scheme{URL_FORM}"),
        ));
    }
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = rest.split('/').next().unwrap_or("");
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    if host.is_empty() || scheme.is_empty() {
        errors.push(FieldError::invalid(
            path,
            host,
            &format!("host must be specified{URL_FORM}"),
        ));
    }
    if let Some(user) = user {
        errors.push(FieldError::invalid(
            path,
            user,
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        errors.push(FieldError::invalid(
            path,
            fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errors.push(FieldError::invalid(
            path,
            query,
            "query parameters are not permitted in the URL",
        ));
    }
}

/// `webhook.ValidateWebhookService`, as kube-apiserver 1.36 calls it: with the service's
/// name and namespace in each other's places (kubernetes/kubernetes#141353), so that a
/// missing name is reported at `service.namespace` and a missing namespace at
/// `service.name`; a port from 1 to 65535; a path of `/`-separated DNS subdomains.
fn webhook_service(service: &Value, path: &str, errors: &mut Vec<FieldError>) {
    if str_at(service, "/namespace").is_empty() {
        errors.push(FieldError::required(&format!("{path}.name"), ""));
    }
    if str_at(service, "/name").is_empty() {
        errors.push(FieldError::required(&format!("{path}.namespace"), ""));
    }
    if let Some(port) = service.get("port").and_then(Value::as_i64)
        && !(1..=65535).contains(&port)
    {
        errors.push(FieldError::invalid(
            &format!("{path}.port"),
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(url_path) = text(service, "path") else {
        return;
    };
    let field = format!("{path}.path");
    if url_path.is_empty() || url_path == "/" {
        return;
    }
    if url_path == "//" {
        errors.push(FieldError::invalid(
            &field,
            url_path,
            "segment[0] may not be empty",
        ));
        return;
    }
    if !url_path.starts_with('/') {
        errors.push(FieldError::invalid(
            &field,
            url_path,
            "must start with a '/'",
        ));
    }
    let rest = url_path.get(1..).unwrap_or("");
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    for (i, step) in rest.split('/').enumerate() {
        if step.is_empty() {
            errors.push(FieldError::invalid(
                &field,
                url_path,
                &format!("segment[{i}] may not be empty"),
            ));
        } else if !is_dns_subdomain(step) {
            errors.push(FieldError::invalid(
                &field,
                url_path,
                &format!("segment[{i}]: {}", super::DNS1123_SUBDOMAIN),
            ));
        }
    }
}

fn policy(spec: Option<&Value>, errors: &mut Vec<FieldError>) {
    let spec = spec.unwrap_or(&Value::Null);
    match text(spec, "failurePolicy") {
        None => errors.push(FieldError::required("spec.failurePolicy", "")),
        Some(_) => one_of(spec, "failurePolicy", "spec", &FAILURE_POLICIES, errors),
    }
    match spec.get("matchConstraints").filter(|v| !v.is_null()) {
        None => errors.push(FieldError::required("spec.matchConstraints", "")),
        Some(constraints) => {
            match_resources(constraints, "spec.matchConstraints", errors);
            // At least one rule, to give the policy its types.
            if constraints
                .get("resourceRules")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
            {
                errors.push(FieldError::required(
                    "spec.matchConstraints.resourceRules",
                    "",
                ));
            }
        }
    }
    match_conditions(spec.get("matchConditions"), "spec.matchConditions", errors);
    let validations = spec
        .get("validations")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let audit = spec
        .get("auditAnnotations")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if validations.is_empty() && !audit {
        for key in ["validations", "auditAnnotations"] {
            errors.push(FieldError::required(
                &format!("spec.{key}"),
                "validations or auditAnnotations must contain at least one item",
            ));
        }
    }
    for (i, validation) in validations.iter().enumerate() {
        if str_at(validation, "/expression").trim().is_empty() {
            errors.push(FieldError::required(
                &format!("spec.validations[{i}].expression"),
                "expression is not specified",
            ));
        }
    }
}

/// `validateMatchConditions`: at most 64; each with an expression and a qualified name,
/// unique (CEL is not compiled).
fn match_conditions(conditions: Option<&Value>, path: &str, errors: &mut Vec<FieldError>) {
    let conditions = conditions
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if conditions.len() > 64 {
        errors.push(FieldError::too_many(path, conditions.len(), 64));
    }
    let mut names = Vec::new();
    for (i, condition) in conditions.iter().enumerate() {
        if str_at(condition, "/expression").trim().is_empty() {
            errors.push(FieldError::required(&format!("{path}[{i}].expression"), ""));
        }
        let name = str_at(condition, "/name");
        if name.is_empty() {
            errors.push(FieldError::required(&format!("{path}[{i}].name"), ""));
        } else {
            qualified_name(&format!("{path}[{i}].name"), name, errors);
            if names.contains(&name) {
                errors.push(FieldError::duplicate(&format!("{path}[{i}].name"), name));
            } else {
                names.push(name);
            }
        }
    }
}

/// The label selectors `namespaceSelector` and `objectSelector` of `object`, if set.
fn selectors(object: &Value, path: &str, errors: &mut Vec<FieldError>) {
    for key in ["namespaceSelector", "objectSelector"] {
        if let Some(selector) = object.get(key).filter(|s| s.is_object()) {
            label_selector(&format!("{path}.{key}"), selector, errors);
        }
    }
}

/// `validateMatchResources`: a supported `matchPolicy`, its selectors and its rules.
fn match_resources(resources: &Value, path: &str, errors: &mut Vec<FieldError>) {
    one_of(resources, "matchPolicy", path, &MATCH_POLICIES, errors);
    selectors(resources, path, errors);
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in resources
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            rule_with_operations(rule, &format!("{path}.{key}[{i}]"), errors);
        }
    }
}

fn binding(spec: Option<&Value>, errors: &mut Vec<FieldError>) {
    let spec = spec.unwrap_or(&Value::Null);
    match str_at(spec, "/policyName") {
        "" => errors.push(FieldError::required("spec.policyName", "")),
        name if !is_dns_subdomain(name) => errors.push(FieldError::invalid(
            "spec.policyName",
            name,
            super::DNS1123_SUBDOMAIN,
        )),
        _ => {}
    }
    if let Some(resources) = spec.get("matchResources").filter(|v| !v.is_null()) {
        // Upstream's path is misspelt so; kept, as clients may match on it.
        match_resources(resources, "spec.matchResouces", errors);
    }
    let actions = strings(spec.get("validationActions"));
    if actions.is_empty() {
        errors.push(FieldError::required(
            "spec.validationActions",
            "at least one validation action is required",
        ));
    }
    let mut seen = Vec::new();
    for (i, action) in actions.iter().enumerate() {
        let path = format!("spec.validationActions[{i}]");
        if seen.contains(action) {
            errors.push(FieldError::duplicate(&path, *action));
        }
        seen.push(action);
        if !VALIDATION_ACTIONS.contains(action) {
            errors.push(FieldError::not_supported(
                &path,
                *action,
                &VALIDATION_ACTIONS,
            ));
        }
    }
    if actions.contains(&"Deny") && actions.contains(&"Warn") {
        errors.push(FieldError::invalid(
            "spec.validationActions",
            spec["validationActions"].clone(),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if let Some(reference) = spec.get("paramRef").filter(|v| v.is_object()) {
        let named = !str_at(reference, "/name").is_empty();
        let selected = reference.get("selector").is_some_and(|s| !s.is_null());
        if let Some(selector) = reference.get("selector").filter(|s| s.is_object()) {
            label_selector("spec.paramRef.selector", selector, errors);
        }
        if named && selected {
            for key in ["name", "selector"] {
                errors.push(FieldError::forbidden(
                    &format!("spec.paramRef.{key}"),
                    "name and selector are mutually exclusive",
                ));
            }
        } else if !named && !selected {
            errors.push(FieldError::required(
                "spec.paramRef",
                "one of name or selector must be specified",
            ));
        }
        match text(reference, "parameterNotFoundAction") {
            None => errors.push(FieldError::required(
                "spec.paramRef.parameterNotFoundAction",
                "",
            )),
            Some(action) if !["Allow", "Deny"].contains(&action) => {
                errors.push(FieldError::not_supported(
                    "spec.paramRef.parameterNotFoundAction",
                    action,
                    &["Allow", "Deny"],
                ))
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests;
