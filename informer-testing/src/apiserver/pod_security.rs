//! The `PodSecurity` admission plugin (on by default since kube-apiserver 1.25), as
//! `k8s.io/pod-security-admission` has it (`admission/admission.go`, `policy/check_*.go`,
//! `api/helpers.go`): a namespace's `pod-security.kubernetes.io/{enforce,audit,warn}`
//! labels name a level (`privileged`, `baseline` or `restricted`) for each mode, and the
//! `-version` labels the policy version (`latest` or `v1.x`).
//!
//! - **enforce**: a Pod (created, or updated in a way that matters: images, seccomp
//!   annotations, containers added; the `ephemeralcontainers` subresource too) that breaks
//!   the level is refused, `403` `pods "<name>" is forbidden: violates PodSecurity
//!   "restricted:latest": <reason> (<detail>), ...`;
//! - **warn**: a Pod, or a workload holding a pod template (Deployment, ReplicaSet,
//!   StatefulSet, DaemonSet, Job, CronJob, ReplicationController, PodTemplate), that breaks
//!   the level is answered with a `Warning` `would violate PodSecurity "...": ...`;
//! - **audit** only annotates the audit log (none here);
//! - a Namespace's labels must parse (`422` otherwise), and raising its enforce level
//!   answers warnings naming the existing Pods that break the new level.
//!
//! The checks are those of the latest policy version (kube-apiserver 1.35's `latest`); a
//! namespace pinning a `-version` is printed as pinned (`"baseline:v1.30"`) but evaluated
//! with the latest checks. No exemptions are configured (as kube-apiserver's default).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::{Map, Value};

use super::status::{FieldError, go_quote};

const LABEL_PREFIX: &str = "pod-security.kubernetes.io/";

/// A policy level, least strict first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }

    /// `api.ParseLevel`.
    fn parse(level: &str) -> Option<Level> {
        match level {
            "privileged" => Some(Level::Privileged),
            "baseline" => Some(Level::Baseline),
            "restricted" => Some(Level::Restricted),
            _ => None,
        }
    }
}

/// A level and a policy version (`None`: `latest`), as `api.LevelVersion`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LevelVersion {
    pub level: Level,
    pub minor: Option<i64>,
}

impl std::fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.minor {
            None => write!(f, "{}:latest", self.level.name()),
            Some(minor) => write!(f, "{}:v1.{minor}", self.level.name()),
        }
    }
}

const PRIVILEGED_LATEST: LevelVersion = LevelVersion {
    level: Level::Privileged,
    minor: None,
};

/// The policy of a namespace, one level and version per mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Policy {
    pub enforce: LevelVersion,
    pub audit: LevelVersion,
    pub warn: LevelVersion,
}

/// `api.ParseVersion`: `latest` or `v1.x`; anything else is `latest` and an error.
fn parse_version(version: &str) -> Result<Option<i64>, ()> {
    if version == "latest" {
        return Ok(None);
    }
    let minor = version.strip_prefix("v1.").ok_or(())?;
    let canonical = minor == "0" || minor.starts_with(|c: char| ('1'..='9').contains(&c));
    if !canonical || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return Err(());
    }
    minor.parse::<i64>().map(Some).map_err(|_| ())
}

/// `api.PolicyToEvaluate` with kube-apiserver's default policy (`privileged:latest` for
/// every mode): the policy a namespace's labels name, and an error for each label that does
/// not parse. An enforce level that does not parse is `restricted`, an audit or warn one
/// `privileged`; a version that does not parse is `latest`.
pub(crate) fn policy(namespace: Option<&Value>) -> (Policy, Vec<FieldError>) {
    let mut policy = Policy {
        enforce: PRIVILEGED_LATEST,
        audit: PRIVILEGED_LATEST,
        warn: PRIVILEGED_LATEST,
    };
    let mut errors = Vec::new();
    let Some(labels) = namespace
        .and_then(|ns| ns.pointer("/metadata/labels"))
        .and_then(Value::as_object)
    else {
        return (policy, errors);
    };
    let modes = [
        ("enforce", &mut policy.enforce, Level::Restricted),
        ("audit", &mut policy.audit, Level::Privileged),
        ("warn", &mut policy.warn, Level::Privileged),
    ];
    for (mode, level_version, fallback) in modes {
        let level_label = format!("{LABEL_PREFIX}{mode}");
        if let Some(level) = label(labels, &level_label) {
            level_version.level = Level::parse(level).unwrap_or_else(|| {
                errors.push(FieldError::invalid(
                    &format!("metadata.labels[{level_label}]"),
                    level,
                    "must be one of privileged, baseline, restricted",
                ));
                fallback
            });
        }
        let version_label = format!("{LABEL_PREFIX}{mode}-version");
        if let Some(version) = label(labels, &version_label) {
            level_version.minor = parse_version(version).unwrap_or_else(|()| {
                errors.push(FieldError::invalid(
                    &format!("metadata.labels[{version_label}]"),
                    version,
                    r#"must be "latest" or "v1.x""#,
                ));
                None
            });
        }
    }
    (policy, errors)
}

fn label<'a>(labels: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    labels.get(key).and_then(Value::as_str)
}

/// Why a check forbids a pod: a short reason (`host ports`) and what broke it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Forbidden {
    pub reason: String,
    pub detail: String,
}

fn forbid(reason: impl Into<String>, detail: impl Into<String>) -> Option<Forbidden> {
    Some(Forbidden {
        reason: reason.into(),
        detail: detail.into(),
    })
}

/// A check of the pod's metadata and spec; `None` allows.
type CheckFn = fn(&Value, &Value) -> Option<Forbidden>;

/// A check of the registry (`policy.Check`, its latest version).
struct Check {
    id: &'static str,
    level: Level,
    /// The baseline checks this restricted check replaces at the restricted level.
    overrides: &'static [&'static str],
    check: CheckFn,
}

const fn baseline(id: &'static str, check: CheckFn) -> Check {
    Check {
        id,
        level: Level::Baseline,
        overrides: &[],
        check,
    }
}

const fn restricted(id: &'static str, overrides: &'static [&'static str], check: CheckFn) -> Check {
    Check {
        id,
        level: Level::Restricted,
        overrides,
        check,
    }
}

/// Every check, baseline then restricted, each level's sorted by ID: the order
/// `policy/registry.go` runs them in, and so the order of a message's reasons.
const CHECKS: &[Check] = &[
    baseline("appArmorProfile", app_armor_profile),
    baseline("capabilities_baseline", capabilities_baseline),
    baseline("hostNamespaces", host_namespaces),
    baseline("hostPathVolumes", host_path_volumes),
    baseline("hostPorts", host_ports),
    baseline("hostProbesAndHostLifecycle", host_probes_and_host_lifecycle),
    baseline("privileged", privileged),
    baseline("procMount", proc_mount_baseline),
    baseline("seLinuxOptions", se_linux_options),
    baseline("seccompProfile_baseline", seccomp_profile_baseline),
    baseline("sysctls", sysctls),
    baseline("windowsHostProcess", windows_host_process),
    restricted("allowPrivilegeEscalation", &[], allow_privilege_escalation),
    restricted(
        "capabilities_restricted",
        &["capabilities_baseline"],
        capabilities_restricted,
    ),
    restricted("procMount_restricted", &["procMount"], proc_mount),
    restricted(
        "restrictedVolumes",
        &["hostPathVolumes"],
        restricted_volumes,
    ),
    restricted("runAsNonRoot", &[], run_as_non_root),
    restricted("runAsUser", &[], run_as_user),
    restricted(
        "seccompProfile_restricted",
        &["seccompProfile_baseline"],
        seccomp_profile_restricted,
    ),
];

/// `checkRegistry.EvaluatePod`: what each check of `level` forbids of a pod (its metadata
/// and spec), in the registry's order.
pub(crate) fn evaluate(level: Level, meta: &Value, spec: &Value) -> Vec<Forbidden> {
    if level == Level::Privileged {
        return Vec::new();
    }
    let overridden: HashSet<&str> = if level == Level::Restricted {
        CHECKS
            .iter()
            .flat_map(|c| c.overrides.iter().copied())
            .collect()
    } else {
        HashSet::new()
    };
    CHECKS
        .iter()
        .filter(|c| c.level <= level && !overridden.contains(c.id))
        .filter_map(|c| (c.check)(meta, spec))
        .collect()
}

/// `AggregateCheckResult.ForbiddenDetail`: each reason with its detail in parentheses.
pub(crate) fn forbidden_detail(results: &[Forbidden]) -> String {
    results
        .iter()
        .map(|r| {
            if r.detail.is_empty() {
                r.reason.clone()
            } else {
                format!("{} ({})", r.reason, r.detail)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `AggregateCheckResult.ForbiddenReason`: the reasons alone.
fn forbidden_reason(results: &[Forbidden]) -> String {
    results
        .iter()
        .map(|r| r.reason.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn would_violate(level: LevelVersion, results: &[Forbidden]) -> String {
    format!(
        "would violate PodSecurity {}: {}",
        go_quote(&level.to_string()),
        forbidden_detail(results)
    )
}

/// `ValidatePod`: a Pod created, or updated from `old` (its main resource or its
/// `ephemeralcontainers`), in `namespace`. `Err` is why the enforce level refuses it (the
/// `403`'s message after `pods "<name>" is forbidden: `); `Ok` the warnings to answer.
pub(crate) fn admit_pod(
    namespace: Option<&Value>,
    old: Option<&Value>,
    pod: &Value,
) -> Result<Vec<String>, String> {
    let (policy, errors) = policy(namespace);
    if errors.is_empty()
        && policy.enforce.level == Level::Privileged
        && policy.warn.level == Level::Privileged
        && policy.audit.level == Level::Privileged
    {
        return Ok(Vec::new());
    }
    if let Some(old) = old
        && !significant_pod_update(pod, old)
    {
        return Ok(Vec::new());
    }
    let (meta, spec) = (&pod["metadata"], &pod["spec"]);
    let enforced = evaluate(policy.enforce.level, meta, spec);
    if !enforced.is_empty() {
        return Err(format!(
            "violates PodSecurity {}: {}",
            go_quote(&policy.enforce.to_string()),
            forbidden_detail(&enforced)
        ));
    }
    let warned = evaluate(policy.warn.level, meta, spec);
    Ok(if warned.is_empty() {
        Vec::new()
    } else {
        vec![would_violate(policy.warn, &warned)]
    })
}

/// `DefaultPodSpecExtractor`: the pod template (its metadata and spec) of a workload of the
/// group and resource, `None` for other types and for a workload without one.
fn pod_template<'a>(group: &str, plural: &str, object: &'a Value) -> Option<&'a Value> {
    let pointer = match (group, plural) {
        ("", "podtemplates") => "/template",
        ("", "replicationcontrollers")
        | ("apps", "replicasets" | "deployments" | "statefulsets" | "daemonsets")
        | ("batch", "jobs") => "/spec/template",
        ("batch", "cronjobs") => "/spec/jobTemplate/spec/template",
        _ => return None,
    };
    object.pointer(pointer).filter(|t| !t.is_null())
}

/// `ValidatePodController`: the warnings for a workload of the group and resource (its main
/// resource, created or updated) whose pod template breaks its namespace's warn level. A
/// workload is never refused.
pub(crate) fn admit_pod_controller(
    namespace: Option<&Value>,
    group: &str,
    plural: &str,
    object: &Value,
) -> Vec<String> {
    let Some(template) = pod_template(group, plural, object) else {
        return Vec::new();
    };
    let (policy, errors) = policy(namespace);
    if errors.is_empty()
        && policy.warn.level == Level::Privileged
        && policy.audit.level == Level::Privileged
    {
        return Vec::new();
    }
    let warned = evaluate(policy.warn.level, &template["metadata"], &template["spec"]);
    if warned.is_empty() {
        Vec::new()
    } else {
        vec![would_violate(policy.warn, &warned)]
    }
}

/// `ValidateNamespace`'s refusal: a new Namespace's labels must parse, an updated one's
/// too unless they fail as they did before. Each error is a `422` cause.
pub(crate) fn namespace_label_errors(old: Option<&Value>, new: &Value) -> Vec<FieldError> {
    let (_, errors) = policy(Some(new));
    if errors.is_empty() {
        return errors;
    }
    match old {
        Some(old) => {
            let (_, old_errors) = policy(Some(old));
            if !old_errors.is_empty() && old_errors == errors {
                Vec::new()
            } else {
                errors
            }
        }
        None => errors,
    }
}

/// The most existing Pods a raised enforce level is checked against.
const MAX_PODS_TO_CHECK: usize = 3000;

/// `ValidateNamespace`'s warnings for a Namespace updated from `old`: when its enforce
/// level rises (or its version changes to a level not privileged), which of its `pods`
/// break the new level (`EvaluatePodsInNamespace`).
pub(crate) fn namespace_warnings(old: &Value, new: &Value, pods: &[&Value]) -> Vec<String> {
    let (new_policy, _) = policy(Some(new));
    let (old_policy, _) = policy(Some(old));
    let (enforce, was) = (new_policy.enforce, old_policy.enforce);
    if enforce == was
        || enforce.level == Level::Privileged
        || enforce.minor == was.minor && enforce.level <= was.level
    {
        return Vec::new();
    }
    let name = new
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    pods_in_namespace_warnings(name, enforce, pods)
}

/// `EvaluatePodsInNamespace`: one warning per distinct set of reasons, naming the first
/// pod by name and how many others share it, sorted; after a summary line.
fn pods_in_namespace_warnings(
    namespace: &str,
    enforce: LevelVersion,
    pods: &[&Value],
) -> Vec<String> {
    let mut prioritized = prioritize_pods(pods);
    let total = prioritized.len();
    prioritized.truncate(MAX_PODS_TO_CHECK);
    // Each distinct warning in the order first met: the first pod by name, and the count.
    let mut seen: Vec<String> = Vec::new();
    let mut counts: BTreeMap<String, (String, usize)> = BTreeMap::new();
    for pod in &prioritized {
        let results = evaluate(enforce.level, &pod["metadata"], &pod["spec"]);
        if results.is_empty() {
            continue;
        }
        let warning = forbidden_reason(&results);
        let name = pod
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        match counts.get_mut(&warning) {
            Some((first, count)) => {
                if name < first.as_str() {
                    *first = name.to_string();
                }
                *count += 1;
            }
            None => {
                seen.push(warning.clone());
                counts.insert(warning, (name.to_string(), 1));
            }
        }
    }
    let mut warnings = Vec::new();
    if prioritized.len() < total {
        warnings.push(format!(
            "new PodSecurity enforce level only checked against the first {} of {total} existing pods",
            prioritized.len()
        ));
    }
    if !seen.is_empty() {
        warnings.push(format!(
            "existing pods in namespace {} violate the new PodSecurity enforce level {}",
            go_quote(namespace),
            go_quote(&enforce.to_string())
        ));
    }
    let mut pod_warnings: Vec<String> = seen
        .into_iter()
        .map(|warning| {
            let (first, count) = &counts[&warning];
            match count {
                1 => format!("{first}: {warning}"),
                2 => format!("{first} (and 1 other pod): {warning}"),
                n => format!("{first} (and {} other pods): {warning}", n - 1),
            }
        })
        .collect();
    pod_warnings.sort();
    warnings.extend(pod_warnings);
    warnings
}

/// `prioritizePods`: the pods without a controller and the first of each controller's,
/// then the other pods of controllers already met.
fn prioritize_pods<'a>(pods: &[&'a Value]) -> Vec<&'a Value> {
    let mut first = Vec::new();
    let mut duplicates = Vec::new();
    let mut controllers = HashSet::new();
    for pod in pods {
        let controller = pod
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|owner| owner.get("controller").and_then(Value::as_bool) == Some(true))
            .map(|owner| owner.get("uid").and_then(Value::as_str).unwrap_or(""));
        match controller {
            Some(uid) if !controllers.insert(uid) => duplicates.push(*pod),
            _ => first.push(*pod),
        }
    }
    first.extend(duplicates);
    first
}

const SECCOMP_POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER_ANNOTATION: &str = "container.seccomp.security.alpha.kubernetes.io/";

/// `isSignificantPodUpdate`: whether an update changes what the checks could see of a pod
/// whose other fields cannot change: the seccomp annotations, the number of containers,
/// their images, an ephemeral container added or changed.
fn significant_pod_update(pod: &Value, old: &Value) -> bool {
    let annotation = |pod: &Value, key: &str| -> String {
        str_at(pod, &["metadata", "annotations", key]).to_string()
    };
    let list = |pod: &Value, field: &str| -> Vec<Value> {
        at(pod, &["spec", field])
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    if annotation(pod, SECCOMP_POD_ANNOTATION) != annotation(old, SECCOMP_POD_ANNOTATION) {
        return true;
    }
    // A container changes with its image or its seccomp annotation.
    let changed = |new: &Value, previous: &Value| {
        let key = format!("{SECCOMP_CONTAINER_ANNOTATION}{}", name(new));
        str_at(new, &["image"]) != str_at(previous, &["image"])
            || annotation(pod, &key) != annotation(old, &key)
    };
    for field in ["containers", "initContainers"] {
        let (new, previous) = (list(pod, field), list(old, field));
        if new.len() != previous.len() || new.iter().zip(&previous).any(|(n, p)| changed(n, p)) {
            return true;
        }
    }
    let previous = list(old, "ephemeralContainers");
    list(pod, "ephemeralContainers").iter().any(|container| {
        match previous.iter().find(|p| name(p) == name(container)) {
            None => true,
            Some(p) => changed(container, p),
        }
    })
}

// --- pod access -------------------------------------------------------------------------

/// A field that is set (not missing, not null), as a Go pointer that is not nil.
fn set<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    value.get(key).filter(|v| !v.is_null())
}

/// A field at a path of keys, each set.
fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| set(v, key))
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    at(value, path).and_then(Value::as_str).unwrap_or("")
}

fn name(container: &Value) -> &str {
    str_at(container, &["name"])
}

/// `visitContainers`: the init containers, the containers, the ephemeral containers.
fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(|field| {
            set(spec, field)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
}

/// Each container's name with its `securityContext` (set).
fn security_contexts(spec: &Value) -> impl Iterator<Item = (&str, &Value)> {
    containers(spec).filter_map(|c| Some((name(c), set(c, "securityContext")?)))
}

fn volumes(spec: &Value) -> impl Iterator<Item = &Value> {
    set(spec, "volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn is_windows(spec: &Value) -> bool {
    str_at(spec, &["os", "name"]) == "windows"
}

/// `relaxPolicyForUserNamespacePod`: a pod in a user namespace (`hostUsers: false`).
fn in_user_namespace(spec: &Value) -> bool {
    at(spec, &["hostUsers"]).and_then(Value::as_bool) == Some(false)
}

fn is_true(value: Option<&Value>) -> bool {
    value.and_then(Value::as_bool) == Some(true)
}

/// `joinQuote`.
fn join_quote<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let items: Vec<String> = items
        .into_iter()
        .map(|s| format!("\"{}\"", s.as_ref()))
        .collect();
    items.join(", ")
}

/// `pluralize`.
fn pluralize<'a>(singular: &'a str, plural: &'a str, count: usize) -> &'a str {
    if count == 1 { singular } else { plural }
}

/// `container "a"` / `containers "a", "b"`.
fn containers_named(names: &[&str]) -> String {
    format!(
        "{} {}",
        pluralize("container", "containers", names.len()),
        join_quote(names)
    )
}

/// `container "a" uses hostPort 80`, `volumes "a", "b" use restricted volume types "x", "y"`:
/// the subjects (quoted) that use the things (`listed` already printed).
fn subjects_use<S: AsRef<str>>(
    subject: (&str, &str),
    subjects: impl ExactSizeIterator<Item = S>,
    thing: (&str, &str),
    things: usize,
    listed: &str,
) -> String {
    let count = subjects.len();
    format!(
        "{} {} {} {} {listed}",
        pluralize(subject.0, subject.1, count),
        join_quote(subjects),
        pluralize("uses", "use", count),
        pluralize(thing.0, thing.1, things),
    )
}

/// What a check answers of the containers that break it: `None` for none, else
/// `<reason> (container "a" <must>)`.
fn forbid_containers(reason: &str, bad: &[&str], must: &str) -> Option<Forbidden> {
    if bad.is_empty() {
        return None;
    }
    forbid(reason, format!("{} {must}", containers_named(bad)))
}

/// The setters of a forbidden value: `pod` if the pod's own context sets it, then the
/// containers that do; joined with ` and `.
fn setters(pod: bool, containers: &[&str]) -> String {
    let mut setters = Vec::new();
    if pod {
        setters.push("pod".to_string());
    }
    if !containers.is_empty() {
        setters.push(containers_named(containers));
    }
    setters.join(" and ")
}

// --- baseline checks --------------------------------------------------------------------

const APP_ARMOR_ANNOTATION: &str = "container.apparmor.security.beta.kubernetes.io/";

fn allowed_app_armor_type(profile: &Value) -> bool {
    matches!(str_at(profile, &["type"]), "RuntimeDefault" | "Localhost")
}

/// `appArmorProfile`: the pod's and containers' `appArmorProfile.type` must be
/// `RuntimeDefault` or `Localhost`; the beta annotations empty, `runtime/default` or
/// `localhost/*`.
fn app_armor_profile(meta: &Value, spec: &Value) -> Option<Forbidden> {
    let mut bad_values = BTreeSet::new();
    let pod = at(spec, &["securityContext", "appArmorProfile"])
        .filter(|p| !allowed_app_armor_type(p))
        .inspect(|p| {
            bad_values.insert(str_at(p, &["type"]).to_string());
        })
        .is_some();
    let mut bad_containers = Vec::new();
    for (name, context) in security_contexts(spec) {
        if let Some(profile) = set(context, "appArmorProfile")
            && !allowed_app_armor_type(profile)
        {
            bad_containers.push(name);
            bad_values.insert(str_at(profile, &["type"]).to_string());
        }
    }
    let mut annotations: Vec<String> = set(meta, "annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(key, _)| key.starts_with(APP_ARMOR_ANNOTATION))
        .map(|(key, value)| (key, value.as_str().unwrap_or("")))
        .filter(|(_, value)| {
            !(value.is_empty() || *value == "runtime/default" || value.starts_with("localhost/"))
        })
        .map(|(key, value)| format!("{key}={}", go_quote(value)))
        .collect();
    annotations.sort();
    let mut who = setters(pod, &bad_containers);
    if !annotations.is_empty() {
        let annotation = pluralize("annotation", "annotations", annotations.len());
        who = if who.is_empty() {
            annotation.to_string()
        } else {
            format!("{who} and {annotation}")
        };
    }
    if who.is_empty() {
        return None;
    }
    let values: Vec<String> = bad_values.into_iter().chain(annotations).collect();
    forbid(
        pluralize(
            "forbidden AppArmor profile",
            "forbidden AppArmor profiles",
            values.len(),
        ),
        format!(
            "{who} must not set AppArmor profile type to {}",
            join_quote(&values)
        ),
    )
}

const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

fn added_capabilities(context: &Value) -> impl Iterator<Item = &str> {
    at(context, &["capabilities", "add"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| c.as_str().unwrap_or(""))
}

/// `capabilities_baseline`: containers may only add the default capabilities.
fn capabilities_baseline(_: &Value, spec: &Value) -> Option<Forbidden> {
    let mut bad_containers = Vec::new();
    let mut capabilities = BTreeSet::new();
    for (name, context) in security_contexts(spec) {
        let mut valid = true;
        for capability in added_capabilities(context) {
            if !BASELINE_CAPABILITIES.contains(&capability) {
                valid = false;
                capabilities.insert(capability);
            }
        }
        if !valid {
            bad_containers.push(name);
        }
    }
    forbid_containers(
        "non-default capabilities",
        &bad_containers,
        &format!(
            "must not include {} in securityContext.capabilities.add",
            join_quote(&capabilities)
        ),
    )
}

/// `hostNamespaces`: no `hostNetwork`, `hostPID`, `hostIPC`.
fn host_namespaces(_: &Value, spec: &Value) -> Option<Forbidden> {
    let mut namespaces: Vec<&str> = ["hostNetwork", "hostPID", "hostIPC"]
        .into_iter()
        .filter(|field| is_true(spec.get(*field)))
        .collect();
    namespaces.sort_unstable();
    if namespaces.is_empty() {
        return None;
    }
    forbid("host namespaces", namespaces.join(", "))
}

/// `hostPathVolumes`: no `hostPath` volume.
fn host_path_volumes(_: &Value, spec: &Value) -> Option<Forbidden> {
    let host: Vec<&str> = volumes(spec)
        .filter(|v| set(v, "hostPath").is_some())
        .map(name)
        .collect();
    if host.is_empty() {
        return None;
    }
    forbid(
        "hostPath volumes",
        format!(
            "{} {}",
            pluralize("volume", "volumes", host.len()),
            join_quote(&host)
        ),
    )
}

/// `hostPorts`: no container port with a `hostPort`.
fn host_ports(_: &Value, spec: &Value) -> Option<Forbidden> {
    let mut bad_containers = Vec::new();
    let mut ports = BTreeSet::new();
    for container in containers(spec) {
        let mut valid = true;
        for port in set(container, "ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let host_port = port.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            if host_port != 0 {
                valid = false;
                ports.insert(host_port.to_string());
            }
        }
        if !valid {
            bad_containers.push(name(container));
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    let listed = ports
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    forbid(
        "hostPort",
        subjects_use(
            ("container", "containers"),
            bad_containers.iter(),
            ("hostPort", "hostPorts"),
            ports.len(),
            &listed,
        ),
    )
}

/// `hostProbesAndHostLifecycle`: no `host` in a probe's or lifecycle hook's `httpGet` or
/// `tcpSocket`.
fn host_probes_and_host_lifecycle(_: &Value, spec: &Value) -> Option<Forbidden> {
    let mut bad_containers = BTreeSet::new();
    let mut hosts = BTreeSet::new();
    for container in containers(spec) {
        let handlers: [&[&str]; 5] = [
            &["livenessProbe"],
            &["readinessProbe"],
            &["startupProbe"],
            &["lifecycle", "postStart"],
            &["lifecycle", "preStop"],
        ];
        for handler in handlers {
            let Some(handler) = at(container, handler) else {
                continue;
            };
            for action in ["httpGet", "tcpSocket"] {
                let host = str_at(handler, &[action, "host"]);
                if !host.is_empty() {
                    bad_containers.insert(name(container));
                    hosts.insert(host);
                }
            }
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    forbid(
        "probe or lifecycle host",
        subjects_use(
            ("container", "containers"),
            bad_containers.iter(),
            ("probe or lifecycle host", "probe or lifecycle hosts"),
            hosts.len(),
            &join_quote(&hosts),
        ),
    )
}

/// `privileged`: no privileged container.
fn privileged(_: &Value, spec: &Value) -> Option<Forbidden> {
    let bad: Vec<&str> = security_contexts(spec)
        .filter(|(_, context)| is_true(context.get("privileged")))
        .map(|(name, _)| name)
        .collect();
    forbid_containers(
        "privileged",
        &bad,
        "must not set securityContext.privileged=true",
    )
}

/// `procMount` (baseline, 1.35): as [`proc_mount`], but a pod in a user namespace may
/// unmask `/proc`.
fn proc_mount_baseline(meta: &Value, spec: &Value) -> Option<Forbidden> {
    if in_user_namespace(spec) {
        return None;
    }
    proc_mount(meta, spec)
}

/// `procMount_restricted` (`procMount_1_0`): no container's `procMount` but `Default`.
fn proc_mount(_: &Value, spec: &Value) -> Option<Forbidden> {
    let mut bad_containers = Vec::new();
    let mut types = BTreeSet::new();
    for (name, context) in security_contexts(spec) {
        if let Some(proc_mount) = set(context, "procMount") {
            let proc_mount = proc_mount.as_str().unwrap_or("");
            if proc_mount != "Default" {
                bad_containers.push(name);
                types.insert(proc_mount);
            }
        }
    }
    forbid_containers(
        "procMount",
        &bad_containers,
        &format!(
            "must not set securityContext.procMount to {}",
            join_quote(&types)
        ),
    )
}

const SELINUX_TYPES: [&str; 5] = [
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// `seLinuxOptions` (1.31): the pod's and containers' type among the container types; no
/// user, no role.
fn se_linux_options(_: &Value, spec: &Value) -> Option<Forbidden> {
    let mut bad_types = BTreeSet::new();
    let (mut set_user, mut set_role) = (false, false);
    let mut valid = |options: &Value| {
        let mut valid = true;
        let kind = str_at(options, &["type"]);
        if !SELINUX_TYPES.contains(&kind) {
            valid = false;
            bad_types.insert(kind.to_string());
        }
        if !str_at(options, &["user"]).is_empty() {
            valid = false;
            set_user = true;
        }
        if !str_at(options, &["role"]).is_empty() {
            valid = false;
            set_role = true;
        }
        valid
    };
    let pod = at(spec, &["securityContext", "seLinuxOptions"]).is_some_and(|o| !valid(o));
    let mut bad_containers = Vec::new();
    for (name, context) in security_contexts(spec) {
        if let Some(options) = set(context, "seLinuxOptions")
            && !valid(options)
        {
            bad_containers.push(name);
        }
    }
    if !pod && bad_containers.is_empty() {
        return None;
    }
    let mut bad_data = Vec::new();
    if !bad_types.is_empty() {
        bad_data.push(format!(
            "{} {}",
            pluralize("type", "types", bad_types.len()),
            join_quote(&bad_types)
        ));
    }
    if set_user {
        bad_data.push("user may not be set".to_string());
    }
    if set_role {
        bad_data.push("role may not be set".to_string());
    }
    forbid(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            setters(pod, &bad_containers),
            bad_data.join("; ")
        ),
    )
}

fn valid_seccomp(profile: &Value) -> bool {
    matches!(str_at(profile, &["type"]), "Localhost" | "RuntimeDefault")
}

/// The seccomp profiles set to a type other than `RuntimeDefault` or `Localhost`: whether
/// the pod's is, the containers whose are, the types; and the containers that set none.
struct Seccomp<'a> {
    pod_bad: bool,
    pod_valid: bool,
    bad_containers: Vec<&'a str>,
    unset_containers: Vec<&'a str>,
    bad_values: BTreeSet<&'a str>,
}

fn seccomp(spec: &Value) -> Seccomp<'_> {
    let mut found = Seccomp {
        pod_bad: false,
        pod_valid: false,
        bad_containers: Vec::new(),
        unset_containers: Vec::new(),
        bad_values: BTreeSet::new(),
    };
    if let Some(profile) = at(spec, &["securityContext", "seccompProfile"]) {
        if valid_seccomp(profile) {
            found.pod_valid = true;
        } else {
            found.pod_bad = true;
            found.bad_values.insert(str_at(profile, &["type"]));
        }
    }
    for container in containers(spec) {
        match at(container, &["securityContext", "seccompProfile"]) {
            Some(profile) if !valid_seccomp(profile) => {
                found.bad_containers.push(name(container));
                found.bad_values.insert(str_at(profile, &["type"]));
            }
            Some(_) => {}
            None => found.unset_containers.push(name(container)),
        }
    }
    found
}

fn seccomp_bad_setters(found: &Seccomp<'_>) -> Option<Forbidden> {
    if !found.pod_bad && found.bad_containers.is_empty() {
        return None;
    }
    forbid(
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            setters(found.pod_bad, &found.bad_containers),
            join_quote(&found.bad_values)
        ),
    )
}

/// `seccompProfile_baseline` (1.19): no seccomp profile but `RuntimeDefault` or
/// `Localhost`, where one is set.
fn seccomp_profile_baseline(_: &Value, spec: &Value) -> Option<Forbidden> {
    seccomp_bad_setters(&seccomp(spec))
}

const SAFE_SYSCTLS: [&str; 12] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
];

/// `sysctls` (1.32): only the safe sysctls.
fn sysctls(_: &Value, spec: &Value) -> Option<Forbidden> {
    let forbidden: Vec<&str> = at(spec, &["securityContext", "sysctls"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| str_at(s, &["name"]))
        .filter(|name| !SAFE_SYSCTLS.contains(name))
        .collect();
    if forbidden.is_empty() {
        return None;
    }
    forbid("forbidden sysctls", forbidden.join(", "))
}

/// `windowsHostProcess`: no `windowsOptions.hostProcess`.
fn windows_host_process(_: &Value, spec: &Value) -> Option<Forbidden> {
    let host_process = |context: &Value| is_true(at(context, &["windowsOptions", "hostProcess"]));
    let bad: Vec<&str> = security_contexts(spec)
        .filter(|(_, context)| host_process(context))
        .map(|(name, _)| name)
        .collect();
    let pod = at(spec, &["securityContext"]).is_some_and(host_process);
    if !pod && bad.is_empty() {
        return None;
    }
    forbid(
        "hostProcess",
        format!(
            "{} must not set securityContext.windowsOptions.hostProcess=true",
            setters(pod, &bad)
        ),
    )
}

// --- restricted checks ------------------------------------------------------------------

/// `allowPrivilegeEscalation` (1.25): every container sets it `false`; Windows pods are
/// exempt.
fn allow_privilege_escalation(_: &Value, spec: &Value) -> Option<Forbidden> {
    if is_windows(spec) {
        return None;
    }
    let bad: Vec<&str> = containers(spec)
        .filter(|c| {
            at(c, &["securityContext", "allowPrivilegeEscalation"]).and_then(Value::as_bool)
                != Some(false)
        })
        .map(name)
        .collect();
    forbid_containers(
        "allowPrivilegeEscalation != false",
        &bad,
        "must set securityContext.allowPrivilegeEscalation=false",
    )
}

/// `capabilities_restricted` (1.25): every container drops `ALL` and adds nothing but
/// `NET_BIND_SERVICE`; Windows pods are exempt.
fn capabilities_restricted(_: &Value, spec: &Value) -> Option<Forbidden> {
    if is_windows(spec) {
        return None;
    }
    let mut missing_drop_all = Vec::new();
    let mut adding_forbidden = Vec::new();
    let mut forbidden = BTreeSet::new();
    for container in containers(spec) {
        let Some(context) =
            set(container, "securityContext").filter(|c| set(c, "capabilities").is_some())
        else {
            missing_drop_all.push(name(container));
            continue;
        };
        let dropped_all = at(context, &["capabilities", "drop"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c.as_str() == Some("ALL"));
        if !dropped_all {
            missing_drop_all.push(name(container));
        }
        let mut added_forbidden = false;
        for capability in added_capabilities(context) {
            if capability != "NET_BIND_SERVICE" {
                added_forbidden = true;
                forbidden.insert(capability);
            }
        }
        if added_forbidden {
            adding_forbidden.push(name(container));
        }
    }
    let mut details = Vec::new();
    if !missing_drop_all.is_empty() {
        details.push(format!(
            r#"{} must set securityContext.capabilities.drop=["ALL"]"#,
            containers_named(&missing_drop_all)
        ));
    }
    if !adding_forbidden.is_empty() {
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_named(&adding_forbidden),
            join_quote(&forbidden)
        ));
    }
    if details.is_empty() {
        return None;
    }
    forbid("unrestricted capabilities", details.join("; "))
}

/// The volume sources the restricted level allows.
const RESTRICTED_VOLUME_SOURCES: [&str; 9] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// The volume sources the restricted level forbids, in the order the check names them.
const FORBIDDEN_VOLUME_SOURCES: [&str; 21] = [
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
];

/// `restrictedVolumes`: only the allowed volume sources.
fn restricted_volumes(_: &Value, spec: &Value) -> Option<Forbidden> {
    let mut bad_volumes = Vec::new();
    let mut bad_types = BTreeSet::new();
    for volume in volumes(spec) {
        if RESTRICTED_VOLUME_SOURCES
            .iter()
            .any(|source| set(volume, source).is_some())
        {
            continue;
        }
        bad_volumes.push(name(volume));
        let source = FORBIDDEN_VOLUME_SOURCES
            .iter()
            .find(|source| set(volume, source).is_some())
            .copied()
            .unwrap_or("unknown");
        bad_types.insert(source);
    }
    if bad_volumes.is_empty() {
        return None;
    }
    forbid(
        "restricted volume types",
        subjects_use(
            ("volume", "volumes"),
            bad_volumes.iter(),
            ("restricted volume type", "restricted volume types"),
            bad_types.len(),
            &join_quote(&bad_types),
        ),
    )
}

/// `runAsNonRoot` (1.35): the pod, or else every container, sets `runAsNonRoot: true`, and
/// none sets it `false`; a pod in a user namespace is exempt.
fn run_as_non_root(_: &Value, spec: &Value) -> Option<Forbidden> {
    if in_user_namespace(spec) {
        return None;
    }
    let pod_setting = at(spec, &["securityContext", "runAsNonRoot"]).and_then(Value::as_bool);
    let pod_bad = pod_setting == Some(false);
    let pod_non_root = pod_setting == Some(true);
    let mut explicitly_bad = Vec::new();
    let mut implicitly_bad = Vec::new();
    for container in containers(spec) {
        match at(container, &["securityContext", "runAsNonRoot"]).and_then(Value::as_bool) {
            Some(false) => explicitly_bad.push(name(container)),
            Some(true) => {}
            None if !pod_non_root => implicitly_bad.push(name(container)),
            None => {}
        }
    }
    if pod_bad || !explicitly_bad.is_empty() {
        return forbid(
            "runAsNonRoot != true",
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                setters(pod_bad, &explicitly_bad)
            ),
        );
    }
    if implicitly_bad.is_empty() {
        return None;
    }
    forbid(
        "runAsNonRoot != true",
        format!(
            "pod or {} must set securityContext.runAsNonRoot=true",
            containers_named(&implicitly_bad)
        ),
    )
}

/// `runAsUser` (1.35): neither the pod nor a container sets `runAsUser: 0`; a pod in a
/// user namespace is exempt.
fn run_as_user(_: &Value, spec: &Value) -> Option<Forbidden> {
    if in_user_namespace(spec) {
        return None;
    }
    let root = |context: &Value| at(context, &["runAsUser"]).and_then(Value::as_i64) == Some(0);
    let pod = at(spec, &["securityContext"]).is_some_and(root);
    let bad: Vec<&str> = security_contexts(spec)
        .filter(|(_, context)| root(context))
        .map(|(name, _)| name)
        .collect();
    if !pod && bad.is_empty() {
        return None;
    }
    forbid(
        "runAsUser=0",
        format!("{} must not set runAsUser=0", setters(pod, &bad)),
    )
}

/// `seccompProfile_restricted` (1.25): the pod, or else every container, sets a seccomp
/// profile of type `RuntimeDefault` or `Localhost`; Windows pods are exempt.
fn seccomp_profile_restricted(_: &Value, spec: &Value) -> Option<Forbidden> {
    if is_windows(spec) {
        return None;
    }
    let found = seccomp(spec);
    if let Some(forbidden) = seccomp_bad_setters(&found) {
        return Some(forbidden);
    }
    if found.pod_valid || found.unset_containers.is_empty() {
        return None;
    }
    forbid(
        "seccompProfile",
        format!(
            r#"pod or {} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
            containers_named(&found.unset_containers)
        ),
    )
}

#[cfg(test)]
mod tests;
