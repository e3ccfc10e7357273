//! `certificates.k8s.io/v1` CertificateSigningRequests, as kube-apiserver's registry serves
//! them (`pkg/registry/certificates/certificates`, `pkg/apis/certificates/validation`):
//!
//! - **storage**: cluster-scoped, short name `csr`, with the `status` and `approval`
//!   subresources; no defaults (the v1 API has none);
//! - **create** (`PrepareForCreate`): `spec.username`, `uid`, `groups` and `extra` are the
//!   requesting user's (impersonation included: `kubectl create --as`), whatever the client
//!   sent; the status is emptied (no pre-approved requests);
//! - **update** (`PrepareForUpdate` of the three strategies): the object itself changes only
//!   its metadata; `/status` changes the status but the `Approved`/`Denied` conditions it
//!   finds (a signer writes `status.certificate` and `Failed` there); `/approval` changes
//!   only `status.conditions` (`kubectl certificate approve|deny` write there); conditions
//!   without `lastUpdateTime`/`lastTransitionTime` get now (the transition time of an
//!   unchanged type and status is kept);
//! - **validation** (`validateCertificateSigningRequest` and its update variants): the
//!   request is a PEM `CERTIFICATE REQUEST` whose PKCS#10 structure parses and whose
//!   signature verifies, `usages` given, known and unique, `signerName` of the form
//!   `example.com/name` (not the legacy one), `expirationSeconds` at least 600, conditions
//!   with a type and a status (`True` only for `Approved`, `Denied`, `Failed`), no type twice,
//!   never both `Approved` and `Denied`, none of those three removed, `Approved`/`Denied`
//!   added or changed only through `/approval`, `status.certificate` (PEM `CERTIFICATE`
//!   blocks) set only through `/status` and never changed once set; the compatibility
//!   allowances for objects that already break a rule, as upstream's `getValidationOptions`;
//! - **printing**: `kubectl get csr` columns `NAME`, `AGE`, `SIGNERNAME`, `REQUESTOR`,
//!   `REQUESTEDDURATION`, `CONDITION` (`Pending`, `Approved,Issued`, `Denied`, ...).
//!
//! No signer and no approver run: a request stays as its clients leave it.
//!
//! Not done: the `CertificateApproval`/`CertificateSigning` admission plugins' `approve` and
//! `sign` checks (every user may do everything); RSA-PSS, P-521 and SHA-512 ECDSA
//! signatures (refused as `algorithm unimplemented`); Go's `asn1` error wording for
//! malformed DER (the messages here name the same failure more plainly).

use base64::Engine as _;
use serde_json::{Value, json};

use super::impersonation::requester;
use super::status::FieldError;
use super::storage::Subresource;
use super::str_at;
use super::time::now_rfc3339;
use super::validation::{DNS1123_LABEL, DNS1123_SUBDOMAIN, is_dns_label_chars};

/// The API group of CertificateSigningRequests.
pub(crate) const GROUP: &str = "certificates.k8s.io";
/// Their kind.
pub(crate) const KIND: &str = "CertificateSigningRequest";

/// `certificates.LegacyUnknownSignerName`, refused by the v1 API.
const LEGACY_UNKNOWN_SIGNER: &str = "kubernetes.io/legacy-unknown";

/// Whether `t` is the CertificateSigningRequest type.
pub(crate) fn is_csr(t: &super::resource::ResourceType) -> bool {
    t.group == GROUP && t.kind == KIND && !t.custom
}

// ---------------------------------------------------------------------------------------
// Strategy
// ---------------------------------------------------------------------------------------

/// `PrepareForCreate`: the requesting user's name, UID, groups and extra attributes in the
/// spec (what the client sent there dropped), and an empty status.
pub(crate) fn prepare_create(object: &mut Value) {
    let user = requester();
    let Value::Object(map) = object else {
        return;
    };
    if let Some(Value::Object(spec)) = map.get_mut("spec") {
        for field in ["username", "uid", "groups", "extra"] {
            spec.remove(field);
        }
        if !user.username.is_empty() {
            spec.insert("username".into(), json!(user.username));
        }
        if !user.uid.is_empty() {
            spec.insert("uid".into(), json!(user.uid));
        }
        if !user.groups.is_empty() {
            spec.insert("groups".into(), json!(user.groups));
        }
        if !user.extra.is_empty() {
            spec.insert("extra".into(), Value::Object(user.extra.clone()));
        }
    }
    map.insert("status".into(), json!({}));
}

/// The object an `/approval` write stores: the stored one with the body's
/// `status.conditions` (and its managed fields).
pub(crate) fn approval_update(old: &Value, new: &Value) -> Value {
    let mut result = old.clone();
    let conditions = new.pointer("/status/conditions").cloned();
    if let Value::Object(map) = &mut result {
        let status = map.entry("status").or_insert_with(|| json!({}));
        if !status.is_object() {
            *status = json!({});
        }
        if let Value::Object(status) = status {
            match conditions {
                Some(conditions) if !conditions.is_null() => {
                    status.insert("conditions".into(), conditions)
                }
                _ => status.remove("conditions"),
            };
        }
        let managed = new.pointer("/metadata/managedFields").cloned();
        if let Some(Value::Object(meta)) = map.get_mut("metadata") {
            match managed {
                Some(managed) => meta.insert("managedFields".into(), managed),
                None => meta.remove("managedFields"),
            };
        }
    }
    result
}

/// What the three strategies' `PrepareForUpdate` do beyond picking the part a subresource
/// writes: the object itself keeps its spec; `/status` keeps the stored `Approved` and
/// `Denied` conditions (when it neither adds nor removes one); `/status` and `/approval`
/// fill in the conditions' missing timestamps.
pub(crate) fn finish_update(old: &Value, subresource: Subresource, new: &mut Value) {
    match subresource {
        Subresource::Main => {
            if let Value::Object(map) = new {
                match old.get("spec") {
                    Some(spec) => map.insert("spec".into(), spec.clone()),
                    None => map.remove("spec"),
                };
            }
        }
        Subresource::Status => {
            preserve_condition_instances(old, new, "Approved");
            preserve_condition_instances(old, new, "Denied");
            populate_condition_timestamps(old, new);
        }
        Subresource::Approval => populate_condition_timestamps(old, new),
        Subresource::Finalize | Subresource::EphemeralContainers => {}
    }
}

fn conditions(object: &Value) -> &[Value] {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn condition_type(condition: &Value) -> &str {
    condition.get("type").and_then(Value::as_str).unwrap_or("")
}

fn condition_indices(object: &Value, type_: &str) -> Vec<usize> {
    conditions(object)
        .iter()
        .enumerate()
        .filter(|(_, c)| condition_type(c) == type_)
        .map(|(i, _)| i)
        .collect()
}

/// `preserveConditionInstances`: the stored instances of `type_` replace the written ones,
/// unless the write added or removed some (validation then refuses it).
fn preserve_condition_instances(old: &Value, new: &mut Value, type_: &str) {
    let old_indices = condition_indices(old, type_);
    let new_indices = condition_indices(new, type_);
    if old_indices.len() != new_indices.len() {
        return;
    }
    let old_conditions = conditions(old).to_vec();
    if let Some(Value::Array(list)) = new.pointer_mut("/status/conditions") {
        for (old_index, new_index) in old_indices.into_iter().zip(new_indices) {
            list[new_index] = old_conditions[old_index].clone();
        }
    }
}

fn is_zero_time(condition: &Value, field: &str) -> bool {
    condition
        .get(field)
        .is_none_or(|t| t.is_null() || t.as_str() == Some(""))
}

/// `populateConditionTimestamps`: `lastUpdateTime` now when missing; `lastTransitionTime`,
/// when missing, the stored one of a condition with the same type and status, else now.
fn populate_condition_timestamps(old: &Value, new: &mut Value) {
    let now = now_rfc3339();
    let old_conditions = conditions(old).to_vec();
    let Some(Value::Array(list)) = new.pointer_mut("/status/conditions") else {
        return;
    };
    for condition in list.iter_mut() {
        if !condition.is_object() {
            continue;
        }
        if is_zero_time(condition, "lastUpdateTime") {
            condition["lastUpdateTime"] = json!(now);
        }
        if is_zero_time(condition, "lastTransitionTime") {
            let kept = old_conditions.iter().find(|o| {
                o.get("type") == condition.get("type")
                    && o.get("status") == condition.get("status")
                    && !is_zero_time(o, "lastTransitionTime")
            });
            condition["lastTransitionTime"] = match kept {
                Some(o) => o["lastTransitionTime"].clone(),
                None => json!(now),
            };
        }
    }
}

// ---------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------

/// Every key usage the API knows (`allValidUsages`), sorted as Go's `sets.List` sorts them.
const USAGES: [&str; 23] = [
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// `certificateValidationOptions`: what a write may do beyond the rules.
#[derive(Default)]
struct Options {
    allow_setting_approval_conditions: bool,
    allow_setting_certificate: bool,
    allow_both_approved_and_denied: bool,
    allow_legacy_signer_name: bool,
    allow_duplicate_condition_types: bool,
    allow_empty_condition_type: bool,
    allow_arbitrary_certificate: bool,
    allow_unknown_usages: bool,
    allow_duplicate_usages: bool,
}

fn usages(object: &Value) -> Vec<&str> {
    object
        .pointer("/spec/usages")
        .and_then(Value::as_array)
        .map(|items| items.iter().map(|u| u.as_str().unwrap_or("")).collect())
        .unwrap_or_default()
}

/// A `[]byte` field (base64 in JSON); `None` when it is not valid base64.
fn bytes_at(object: &Value, pointer: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(str_at(object, pointer))
        .ok()
}

/// `getValidationOptions`: the allowances an update gets from what the stored object
/// already breaks (compatibility with existing data); none on create.
fn options(new: &Value, old: Option<&Value>) -> Options {
    let Some(old) = old else {
        return Options::default();
    };
    let types: Vec<&str> = conditions(old).iter().map(condition_type).collect();
    let old_usages = usages(old);
    let mut seen = std::collections::HashSet::new();
    let old_certificate = bytes_at(old, "/status/certificate").unwrap_or_default();
    Options {
        allow_both_approved_and_denied: types.contains(&"Approved") && types.contains(&"Denied"),
        allow_legacy_signer_name: str_at(old, "/spec/signerName") == LEGACY_UNKNOWN_SIGNER,
        allow_duplicate_condition_types: !types.iter().all(|t| seen.insert(*t)),
        allow_empty_condition_type: types.contains(&""),
        allow_arbitrary_certificate: new.pointer("/status/certificate")
            == old.pointer("/status/certificate")
            || validate_certificate(&old_certificate).is_err(),
        allow_unknown_usages: old_usages.iter().any(|u| !USAGES.contains(u)),
        allow_duplicate_usages: {
            let mut seen = std::collections::HashSet::new();
            !old_usages.iter().all(|u| seen.insert(*u))
        },
        ..Options::default()
    }
}

/// `ValidateCertificateSigningRequestCreate` (less `ValidateObjectMeta`, which the
/// validation module runs for every type).
pub(crate) fn validate_create(object: &Value) -> Vec<FieldError> {
    validate(object, &options(object, None))
}

/// `ValidateCertificateSigningRequestUpdate`, `...StatusUpdate` or `...ApprovalUpdate` by
/// the subresource written (less `ValidateObjectMetaUpdate`).
pub(crate) fn validate_update(
    old: &Value,
    new: &Value,
    subresource: Subresource,
) -> Vec<FieldError> {
    let mut opts = options(new, Some(old));
    match subresource {
        Subresource::Status => opts.allow_setting_certificate = true,
        Subresource::Approval => opts.allow_setting_approval_conditions = true,
        _ => {}
    }
    let mut errors = validate(new, &opts);
    // No Approved, Denied or Failed condition removed.
    for type_ in ["Approved", "Denied", "Failed"] {
        if condition_indices(new, type_).len() < condition_indices(old, type_).len() {
            errors.push(FieldError::forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type {type_:?}"),
            ));
        }
    }
    if !opts.allow_setting_approval_conditions {
        for type_ in ["Approved", "Denied"] {
            let of = |object: &Value| -> Vec<Value> {
                conditions(object)
                    .iter()
                    .filter(|c| condition_type(c) == type_)
                    .cloned()
                    .collect()
            };
            let (old_conditions, new_conditions) = (of(old), of(new));
            if new_conditions.len() > old_conditions.len() {
                errors.push(FieldError::forbidden(
                    "status.conditions",
                    &format!("updates may not add a condition of type {type_:?}"),
                ));
            } else if new_conditions.len() == old_conditions.len()
                && old_conditions != new_conditions
            {
                errors.push(FieldError::forbidden(
                    "status.conditions",
                    &format!("updates may not modify a condition of type {type_:?}"),
                ));
            }
        }
    }
    let certificate = |object: &Value| bytes_at(object, "/status/certificate").unwrap_or_default();
    let (old_certificate, new_certificate) = (certificate(old), certificate(new));
    if old_certificate != new_certificate {
        if !opts.allow_setting_certificate {
            errors.push(FieldError::forbidden(
                "status.certificate",
                "updates may not set certificate content",
            ));
        } else if !old_certificate.is_empty() {
            errors.push(FieldError::forbidden(
                "status.certificate",
                "updates may not modify existing certificate content",
            ));
        }
    }
    errors
}

/// `validateCertificateSigningRequest`.
fn validate(object: &Value, opts: &Options) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let request = bytes_at(object, "/spec/request").unwrap_or_default();
    if let Err(why) = validate_csr(&request) {
        let given = object
            .pointer("/spec/request")
            .is_some_and(Value::is_string);
        errors.push(FieldError::invalid_go(
            "spec.request",
            &json_bytes(given.then_some(request.as_slice())),
            &why,
        ));
    }
    let usages = usages(object);
    if usages.is_empty() {
        errors.push(FieldError::required("spec.usages", ""));
    }
    if !opts.allow_unknown_usages {
        for (i, usage) in usages.iter().enumerate() {
            if !USAGES.contains(usage) {
                errors.push(FieldError::not_supported(
                    &format!("spec.usages[{i}]"),
                    *usage,
                    &USAGES,
                ));
            }
        }
    }
    if !opts.allow_duplicate_usages {
        let mut seen = std::collections::HashSet::new();
        for (i, usage) in usages.iter().enumerate() {
            if !seen.insert(*usage) {
                errors.push(FieldError::duplicate(&format!("spec.usages[{i}]"), *usage));
            }
        }
    }
    let signer = str_at(object, "/spec/signerName");
    if !opts.allow_legacy_signer_name && signer == LEGACY_UNKNOWN_SIGNER {
        errors.push(FieldError::invalid(
            "spec.signerName",
            signer,
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        errors.extend(validate_signer_name("spec.signerName", signer));
    }
    if let Some(seconds) = object
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        && seconds < 600
    {
        errors.push(FieldError::invalid(
            "spec.expirationSeconds",
            seconds,
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    validate_conditions(object, opts, &mut errors);
    if !opts.allow_arbitrary_certificate {
        let certificate = bytes_at(object, "/status/certificate").unwrap_or_default();
        if let Err(why) = validate_certificate(&certificate) {
            errors.push(FieldError::invalid(
                "status.certificate",
                "<certificate data>",
                &why,
            ));
        }
    }
    errors
}

/// `validateConditions`.
fn validate_conditions(object: &Value, opts: &Options, errors: &mut Vec<FieldError>) {
    let mut seen = std::collections::HashSet::new();
    let (mut approved, mut denied) = (false, false);
    for (i, c) in conditions(object).iter().enumerate() {
        let type_ = condition_type(c);
        let path = format!("status.conditions[{i}]");
        if !opts.allow_empty_condition_type && type_.is_empty() {
            errors.push(FieldError::required(&format!("{path}.type"), ""));
        }
        let status = c.get("status").and_then(Value::as_str).unwrap_or("");
        let allowed: &[&str] = if matches!(type_, "Approved" | "Denied" | "Failed") {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        if status.is_empty() {
            errors.push(FieldError::required(&format!("{path}.status"), ""));
        } else if !allowed.contains(&status) {
            errors.push(FieldError::not_supported(
                &format!("{path}.status"),
                status,
                allowed,
            ));
        }
        if !opts.allow_both_approved_and_denied {
            let exclusive = match type_ {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if exclusive {
                errors.push(FieldError::invalid(
                    &format!("{path}.type"),
                    type_,
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !opts.allow_duplicate_condition_types && !seen.insert(type_) {
            errors.push(FieldError::duplicate(&format!("{path}.type"), type_));
        }
    }
}

/// `ValidateSignerName`: `<domain>/<path>`, the domain DNS labels with at least one dot,
/// the path DNS subdomains separated by dots, 571 characters at most.
fn validate_signer_name(field: &str, signer: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if signer.is_empty() {
        errors.push(FieldError::required(field, ""));
        return errors;
    }
    let segments: Vec<&str> = signer.split('/').collect();
    let [domain, path] = segments[..] else {
        errors.push(FieldError::invalid(
            field,
            signer,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
        return errors;
    };
    if domain.len() > 253 {
        errors.push(FieldError::too_long(field, 253));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    for label in &labels {
        let problems = dns_label_errors(label);
        if !problems.is_empty() {
            for problem in problems {
                errors.push(FieldError::invalid(
                    field,
                    domain,
                    &format!("validating label {label:?}: {problem}"),
                ));
            }
            break;
        }
    }
    if labels.len() < 2 {
        errors.push(FieldError::invalid(
            field,
            domain,
            "should be a domain with at least two segments separated by dots",
        ));
    }
    for label in path.split('.') {
        let problems = dns_subdomain_errors(label);
        if !problems.is_empty() {
            for problem in problems {
                errors.push(FieldError::invalid(
                    field,
                    path,
                    &format!("validating label {label:?}: {problem}"),
                ));
            }
            break;
        }
    }
    let max = 253 + (253 + 63 + 1) + 1;
    if signer.len() > max {
        errors.push(FieldError::too_long(field, max));
    }
    errors
}

/// `validation.IsDNS1123Label`'s messages.
fn dns_label_errors(label: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if label.len() > 63 {
        problems.push("must be no more than 63 characters".to_string());
    }
    if !is_dns_label_chars(label) {
        problems.push(DNS1123_LABEL.to_string());
    }
    problems
}

/// `validation.IsDNS1123Subdomain`'s messages, for a part without dots.
fn dns_subdomain_errors(label: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if label.len() > 253 {
        problems.push("must be no more than 253 characters".to_string());
    }
    if !is_dns_label_chars(label) {
        problems.push(DNS1123_SUBDOMAIN.to_string());
    }
    problems
}

/// A field error's bad value of Go type `[]byte`, as `field.Error` prints it (`json.Marshal`:
/// the bytes in standard base64, quoted): `"LS0t"`; `null` for a nil slice, which is what a
/// `request` left out decodes to (an empty string decodes to an empty slice, `""`).
fn json_bytes(bytes: Option<&[u8]>) -> String {
    match bytes {
        Some(bytes) => format!(
            "\"{}\"",
            base64::engine::general_purpose::STANDARD.encode(bytes)
        ),
        None => "null".to_string(),
    }
}

// ---------------------------------------------------------------------------------------
// PEM, DER and PKCS#10
// ---------------------------------------------------------------------------------------

/// One PEM block: its type, whether it has headers, its bytes; and what follows it.
struct PemBlock<'a> {
    label: String,
    headers: bool,
    bytes: Vec<u8>,
    rest: &'a [u8],
}

/// `pem.Decode`: the first well-formed block in `data` (text before it skipped).
fn pem_decode(data: &[u8]) -> Option<PemBlock<'_>> {
    const BEGIN: &[u8] = b"-----BEGIN ";
    let mut from = 0;
    loop {
        let start = find(&data[from..], BEGIN)? + from;
        from = start + BEGIN.len();
        let Some(block) = pem_block_at(data, start) else {
            continue;
        };
        return Some(block);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn pem_block_at(data: &[u8], start: usize) -> Option<PemBlock<'_>> {
    if start > 0 && data[start - 1] != b'\n' {
        return None;
    }
    let after = &data[start + 11..];
    let line_end = after
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(after.len());
    let line = std::str::from_utf8(&after[..line_end]).ok()?.trim_end();
    let label = line.strip_suffix("-----")?.to_string();
    let body_start = start + 11 + (line_end + 1).min(after.len());
    let end_marker = format!("-----END {label}-----");
    let body_end = find(&data[body_start..], end_marker.as_bytes())? + body_start;
    let body = std::str::from_utf8(&data[body_start..body_end]).ok()?;
    let mut lines: Vec<&str> = body.lines().collect();
    let headers = lines.first().is_some_and(|l| l.contains(':'));
    if headers {
        let blank = lines.iter().position(|l| l.trim().is_empty())?;
        lines.drain(..=blank);
    }
    let encoded: String = lines
        .concat()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let mut rest_start = body_end + end_marker.len();
    while rest_start < data.len() && matches!(data[rest_start], b'\r' | b'\n' | b' ' | b'\t') {
        rest_start += 1;
    }
    Some(PemBlock {
        label,
        headers,
        bytes,
        rest: &data[rest_start..],
    })
}

/// One DER element: its tag, contents, and the whole encoding.
#[derive(Clone, Copy)]
struct Der<'a> {
    tag: u8,
    content: &'a [u8],
    raw: &'a [u8],
}

/// Reads one DER element from the front of `input`.
fn der(input: &[u8]) -> Result<(Der<'_>, &[u8]), String> {
    let truncated = || "asn1: syntax error: data truncated".to_string();
    let (&tag, after_tag) = input.split_first().ok_or_else(truncated)?;
    if tag & 0x1f == 0x1f {
        return Err("asn1: syntax error: long-form tags are not supported".into());
    }
    let (&first, mut after) = after_tag.split_first().ok_or_else(truncated)?;
    let length = if first < 0x80 {
        first as usize
    } else if first == 0x80 {
        return Err("asn1: syntax error: indefinite length found (not DER)".into());
    } else {
        let count = (first & 0x7f) as usize;
        if count > 4 || after.len() < count {
            return Err(truncated());
        }
        let mut length = 0usize;
        for &b in &after[..count] {
            length = (length << 8) | b as usize;
        }
        if length < 0x80 || after[0] == 0 {
            return Err("asn1: syntax error: non-minimal length".into());
        }
        after = &after[count..];
        length
    };
    if after.len() < length {
        return Err(truncated());
    }
    let header = input.len() - after.len();
    Ok((
        Der {
            tag,
            content: &after[..length],
            raw: &input[..header + length],
        },
        &after[length..],
    ))
}

/// Reads an element with the tag `tag` (`what` names it in the error).
fn expect<'a>(input: &'a [u8], tag: u8, what: &str) -> Result<(Der<'a>, &'a [u8]), String> {
    let (element, rest) = der(input)?;
    if element.tag != tag {
        return Err(format!(
            "asn1: structure error: tags don't match ({} vs {}) {what}",
            tag & 0x1f,
            element.tag & 0x1f
        ));
    }
    Ok((element, rest))
}

/// An object identifier's dotted form.
fn oid(content: &[u8]) -> String {
    let mut parts = Vec::new();
    let mut value: u64 = 0;
    for (i, &b) in content.iter().enumerate() {
        value = (value << 7) | (b & 0x7f) as u64;
        if b & 0x80 == 0 {
            if parts.is_empty() && i < content.len() {
                let (first, second) = match value {
                    v if v < 40 => (0, v),
                    v if v < 80 => (1, v - 40),
                    v => (2, v - 80),
                };
                parts.push(first.to_string());
                parts.push(second.to_string());
            } else {
                parts.push(value.to_string());
            }
            value = 0;
        }
    }
    parts.join(".")
}

/// An `AlgorithmIdentifier`'s OID and parameters (the raw element, if any).
fn algorithm(element: Der<'_>) -> Result<(String, Option<Der<'_>>), String> {
    let (id, rest) = expect(element.content, 0x06, "AlgorithmIdentifier")?;
    let params = if rest.is_empty() {
        None
    } else {
        Some(der(rest)?.0)
    };
    Ok((oid(id.content), params))
}

/// A BIT STRING's bytes (no unused bits allowed in keys and signatures).
fn bit_string(element: Der<'_>) -> Result<&[u8], String> {
    match element.content.split_first() {
        Some((0, bytes)) => Ok(bytes),
        _ => Err("asn1: syntax error: invalid padding bits in BIT STRING".into()),
    }
}

/// `ParseCSR` then `CheckSignature`, with the errors Go's `crypto/x509` gives.
fn validate_csr(pem: &[u8]) -> Result<(), String> {
    let Some(block) = pem_decode(pem).filter(|b| b.label == "CERTIFICATE REQUEST") else {
        return Err("PEM block type must be CERTIFICATE REQUEST".into());
    };
    let (request, rest) = expect(&block.bytes, 0x30, "certificateRequest")?;
    if !rest.is_empty() {
        return Err("asn1: syntax error: trailing data".into());
    }
    let (info, rest) = expect(request.content, 0x30, "tbsCertificateRequest")?;
    let (signature_algorithm, rest) = expect(rest, 0x30, "AlgorithmIdentifier")?;
    let (signature, _) = expect(rest, 0x03, "BIT STRING")?;
    let (_version, rest) = expect(info.content, 0x02, "version")?;
    let (_subject, rest) = expect(rest, 0x30, "RDNSequence")?;
    let (key_info, rest) = expect(rest, 0x30, "publicKeyInfo")?;
    if !rest.is_empty() {
        // The attributes, `[0]`.
        expect(rest, 0xa0, "attributes")?;
    }
    let (key_algorithm, rest) = expect(key_info.content, 0x30, "AlgorithmIdentifier")?;
    let (key_bits, _) = expect(rest, 0x03, "BIT STRING")?;
    let (key_oid, key_params) = algorithm(key_algorithm)?;
    let key = bit_string(key_bits)?;
    let (signature_oid, _) = algorithm(signature_algorithm)?;
    let signature = bit_string(signature)?;
    check_signature(
        &signature_oid,
        &key_oid,
        key_params,
        key,
        info.raw,
        signature,
    )
}

const RSA: &str = "1.2.840.113549.1.1.1";
const EC: &str = "1.2.840.10045.2.1";
const ED25519: &str = "1.3.101.112";
const P256: &str = "1.2.840.10045.3.1.7";
const P384: &str = "1.3.132.0.34";

/// `checkSignature`: the request's signature by its own key (SHA-1 allowed, as for CSRs).
fn check_signature(
    signature_oid: &str,
    key_oid: &str,
    key_params: Option<Der<'_>>,
    key: &[u8],
    signed: &[u8],
    signature: &[u8],
) -> Result<(), String> {
    use ring::signature as sig;
    let curve = key_params
        .filter(|p| p.tag == 0x06)
        .map(|p| oid(p.content))
        .unwrap_or_default();
    let (algorithm, wanted_key, failure): (&dyn sig::VerificationAlgorithm, &str, &str) =
        match (signature_oid, curve.as_str()) {
            ("1.2.840.113549.1.1.5", _) => (
                &sig::RSA_PKCS1_1024_8192_SHA1_FOR_LEGACY_USE_ONLY,
                RSA,
                "crypto/rsa: verification error",
            ),
            ("1.2.840.113549.1.1.11", _) => (
                &sig::RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY,
                RSA,
                "crypto/rsa: verification error",
            ),
            ("1.2.840.113549.1.1.12", _) => (
                &sig::RSA_PKCS1_2048_8192_SHA384,
                RSA,
                "crypto/rsa: verification error",
            ),
            ("1.2.840.113549.1.1.13", _) => (
                &sig::RSA_PKCS1_1024_8192_SHA512_FOR_LEGACY_USE_ONLY,
                RSA,
                "crypto/rsa: verification error",
            ),
            ("1.2.840.10045.4.3.2", P256) => (
                &sig::ECDSA_P256_SHA256_ASN1,
                EC,
                "x509: ECDSA verification failure",
            ),
            ("1.2.840.10045.4.3.2", P384) => (
                &sig::ECDSA_P384_SHA256_ASN1,
                EC,
                "x509: ECDSA verification failure",
            ),
            ("1.2.840.10045.4.3.3", P256) => (
                &sig::ECDSA_P256_SHA384_ASN1,
                EC,
                "x509: ECDSA verification failure",
            ),
            ("1.2.840.10045.4.3.3", P384) => (
                &sig::ECDSA_P384_SHA384_ASN1,
                EC,
                "x509: ECDSA verification failure",
            ),
            (ED25519, _) => (&sig::ED25519, ED25519, "x509: Ed25519 verification failure"),
            _ => return Err("x509: cannot verify signature: algorithm unimplemented".into()),
        };
    if key_oid != wanted_key {
        let (wanted, have) = (key_kind(wanted_key), key_kind(key_oid));
        return Err(format!(
            "x509: signature algorithm specifies an {wanted} public key, but have public key of type {have}"
        ));
    }
    sig::UnparsedPublicKey::new(algorithm, key)
        .verify(signed, signature)
        .map_err(|_| failure.to_string())
}

fn key_kind(oid: &str) -> &'static str {
    match oid {
        RSA => "RSA",
        EC => "ECDSA",
        ED25519 => "Ed25519",
        _ => "unknown",
    }
}

/// `validateCertificate`: nothing, or PEM `CERTIFICATE` blocks without headers, each of
/// one or more DER certificates.
fn validate_certificate(pem: &[u8]) -> Result<(), String> {
    if pem.is_empty() {
        return Ok(());
    }
    let mut data = pem;
    let mut blocks = 0;
    while let Some(block) = pem_decode(data) {
        if block.label != "CERTIFICATE" {
            return Err(format!(
                "only CERTIFICATE PEM blocks are allowed, found {:?}",
                block.label
            ));
        }
        if block.headers {
            return Err("no PEM block headers are permitted".into());
        }
        blocks += 1;
        let mut der_bytes: &[u8] = &block.bytes;
        if der_bytes.is_empty() {
            return Err("found CERTIFICATE PEM block containing 0 certificates".into());
        }
        while !der_bytes.is_empty() {
            der_bytes = parse_certificate(der_bytes)?;
        }
        data = block.rest;
    }
    if blocks == 0 {
        return Err("must contain at least one CERTIFICATE PEM block".into());
    }
    Ok(())
}

/// One `Certificate` (`tbsCertificate`, `signatureAlgorithm`, `signatureValue`), and what
/// follows it.
fn parse_certificate(input: &[u8]) -> Result<&[u8], String> {
    let malformed = |_| "x509: malformed certificate".to_string();
    let (certificate, rest) = expect(input, 0x30, "certificate").map_err(malformed)?;
    let (_tbs, inner) = expect(certificate.content, 0x30, "tbs").map_err(malformed)?;
    let (_algorithm, inner) = expect(inner, 0x30, "algorithm").map_err(malformed)?;
    let (_signature, inner) = expect(inner, 0x03, "signature").map_err(malformed)?;
    if !inner.is_empty() {
        return Err("x509: malformed certificate".into());
    }
    Ok(rest)
}

// ---------------------------------------------------------------------------------------
// Printing
// ---------------------------------------------------------------------------------------

/// The columns `kubectl get csr` shows (`printers.go`'s `csrColumnDefinitions`), given the
/// `Name` and `Age` columns.
pub(crate) fn table_columns(name: Value, age: Value) -> Vec<Value> {
    let column = |title: &str, description: &str| super::table::column(title, "", description);
    vec![
        name,
        age,
        column(
            "SignerName",
            "Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    \"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. If it's a kubelet serving certificate, it is assigned\n    \"kubernetes.io/kubelet-serving\".\n 3. Otherwise, it is assigned \"kubernetes.io/legacy-unknown\".\nDistribution of trust for signers happens out of band. You can select on this field using `spec.signerName`.",
        ),
        column("Requestor", "Base64-encoded PKCS#10 CSR data"),
        column(
            "RequestedDuration",
            "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a certificate with a different validity duration so a client must check the delta between the notBefore and and notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the well-known Kubernetes signers will honor this field as long as the requested duration is not greater than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the Kubernetes controller manager.\n\nCertificate signers may not honor this field for various reasons:\n\n  1. Old signer that is unaware of the field (such as the in-tree\n     implementations prior to v1.22)\n  2. Signer whose configured maximum is shorter than the requested duration\n  3. Signer whose configured minimum is longer than the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 minutes.\n\nAs of v1.22, this field is beta and is controlled via the CSRDuration feature gate.",
        ),
        column(
            "Condition",
            "Conditions applied to the request, such as approval or denial.",
        ),
    ]
}

/// A request's cells (`printCertificateSigningRequest`).
pub(crate) fn table_cells(object: &Value, name: Value, age: Value) -> Vec<Value> {
    let signer = match str_at(object, "/spec/signerName") {
        "" => "<none>",
        signer => signer,
    };
    let duration = match object
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
    {
        Some(seconds) => super::table::human_duration(seconds),
        None => "<none>".to_string(),
    };
    vec![
        name,
        age,
        json!(signer),
        json!(str_at(object, "/spec/username")),
        json!(duration),
        json!(condition_summary(object)),
    ]
}

/// `extractCSRStatus`: `Denied`, `Approved` or `Pending`, then `,Failed` and `,Issued`.
fn condition_summary(object: &Value) -> String {
    let has = |type_: &str| {
        conditions(object)
            .iter()
            .any(|c| condition_type(c) == type_)
    };
    let mut status = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !str_at(object, "/status/certificate").is_empty() {
        status.push_str(",Issued");
    }
    status
}

#[cfg(test)]
mod tests;
