//! Jobs and CronJobs, as `pkg/apis/batch/validation` checks them (`ValidateJob`,
//! `ValidateCronJobCreate`, `ValidateCronJobUpdate`), for the fields that are present:
//!
//! | type | rule |
//! | --- | --- |
//! | Job, a CronJob's job template | `parallelism`, `completions`, `activeDeadlineSeconds`, `backoffLimit`, `ttlSecondsAfterFinished`, `backoffLimitPerIndex`, `maxFailedIndexes` not negative; `completionMode` `NonIndexed` or `Indexed`; the pod template's containers and restart policy as a Pod's, and the restart policy `OnFailure` or `Never` (`Always`, which an unset one defaults to, is `Required value`) |
//! | CronJob | `schedule` a standard cron schedule as `robfig/cron/v3`'s `ParseStandard` reads it (five fields, names of months and days, ranges, steps, `@hourly` and the other descriptors, `@every <duration>`), with its errors; no `TZ=`/`CRON_TZ=` in it unless the old schedule had one (then not with `timeZone`); `timeZone` an IANA name (checked against the system's zoneinfo when it has one) and never `Local`; `startingDeadlineSeconds` and the history limits not negative; `concurrencyPolicy` `Allow`, `Forbid` or `Replace`; no `selector` and no `manualSelector: true` in the job template; a new CronJob's name at most 52 characters |
//!
//! A CronJob's status writes are not checked (its status strategy validates nothing).

use serde_json::Value;

use crate::apiserver::status::FieldError;

const NEGATIVE: &str = "must be greater than or equal to 0";

/// `ValidateJob`'s spec checks (`validateJobSpec`) of a Job.
pub(super) fn job(object: &Value, errors: &mut Vec<FieldError>) {
    if let Some(spec) = object.get("spec") {
        job_spec("spec", spec, errors);
    }
}

/// `ValidateCronJobCreate` (`old` is `None`) or `ValidateCronJobUpdate` of a CronJob.
pub(super) fn cron_job(object: &Value, old: Option<&Value>, errors: &mut Vec<FieldError>) {
    if let Some(spec) = object.get("spec") {
        cron_job_spec(spec, old.and_then(|old| old.get("spec")), errors);
    }
    let name = super::name_of(object);
    if old.is_none() && name.len() > 52 {
        errors.push(FieldError::invalid(
            "metadata.name",
            name,
            "must be no more than 52 characters",
        ));
    }
}

fn cron_job_spec(spec: &Value, old: Option<&Value>, errors: &mut Vec<FieldError>) {
    let time_zone = spec.get("timeZone").and_then(Value::as_str);
    match spec.get("schedule").and_then(Value::as_str) {
        Some("") => errors.push(FieldError::required("spec.schedule", "")),
        Some(schedule) => {
            let old_schedule = old
                .and_then(|old| old.get("schedule"))
                .and_then(Value::as_str);
            let allow_tz = old_schedule.is_some_and(|s| s.contains("TZ"));
            if let Err(why) = parse_standard(schedule) {
                errors.push(FieldError::invalid("spec.schedule", schedule, &why));
            }
            if allow_tz && schedule.contains("TZ") && time_zone.is_some() {
                errors.push(FieldError::invalid(
                    "spec.schedule",
                    schedule,
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                ));
            } else if !allow_tz && schedule.contains("TZ") {
                errors.push(FieldError::invalid(
                    "spec.schedule",
                    schedule,
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                ));
            }
        }
        None => {}
    }
    non_negative(spec, "spec", "startingDeadlineSeconds", errors);
    let old_zone = old
        .and_then(|old| old.get("timeZone"))
        .and_then(Value::as_str);
    if let Some(zone) = time_zone
        && (old.is_none() || old_zone != Some(zone))
        && let Err(why) = time_zone_error(zone)
    {
        errors.push(FieldError::invalid("spec.timeZone", zone, &why));
    }
    const POLICIES: [&str; 3] = ["Allow", "Forbid", "Replace"];
    match spec.get("concurrencyPolicy").and_then(Value::as_str) {
        Some("") => errors.push(FieldError::required("spec.concurrencyPolicy", "")),
        Some(policy) if !POLICIES.contains(&policy) => errors.push(FieldError::not_supported(
            "spec.concurrencyPolicy",
            policy,
            &POLICIES,
        )),
        _ => {}
    }
    if let Some(job) = spec.pointer("/jobTemplate/spec") {
        let path = "spec.jobTemplate.spec";
        job_spec(path, job, errors);
        if let Some(selector) = job.get("selector").filter(|s| !s.is_null()) {
            errors.push(FieldError::invalid_go(
                &format!("{path}.selector"),
                &super::json_label_selector(selector),
                "`selector` will be auto-generated",
            ));
        }
        if job.get("manualSelector") == Some(&Value::Bool(true)) {
            errors.push(FieldError::not_supported(
                &format!("{path}.manualSelector"),
                true,
                &["nil", "false"],
            ));
        }
    }
    non_negative(spec, "spec", "successfulJobsHistoryLimit", errors);
    non_negative(spec, "spec", "failedJobsHistoryLimit", errors);
}

/// `validateJobSpec`: the counts, the completion mode, the pod template and its restart
/// policy.
fn job_spec(path: &str, spec: &Value, errors: &mut Vec<FieldError>) {
    for field in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        non_negative(spec, path, field, errors);
    }
    const MODES: [&str; 2] = ["NonIndexed", "Indexed"];
    if let Some(mode) = spec.get("completionMode").and_then(Value::as_str)
        && !MODES.contains(&mode)
    {
        errors.push(FieldError::not_supported(
            &format!("{path}.completionMode"),
            mode,
            &MODES,
        ));
    }
    let Some(pod) = spec.pointer("/template/spec").filter(|s| s.is_object()) else {
        return;
    };
    let pod_path = format!("{path}.template.spec");
    super::pod_spec(&pod_path, Some(pod), errors);
    let field = format!("{pod_path}.restartPolicy");
    match pod
        .get("restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("")
    {
        "Always" | "" => errors.push(FieldError::required(
            &field,
            "valid values: \"OnFailure\", \"Never\"",
        )),
        "OnFailure" | "Never" => {}
        other => errors.push(FieldError::not_supported(
            &field,
            other,
            &["OnFailure", "Never"],
        )),
    }
}

/// `ValidateNonnegativeField` of an integer field of `spec`, when it is there.
fn non_negative(spec: &Value, path: &str, field: &str, errors: &mut Vec<FieldError>) {
    if let Some(n) = spec.get(field).and_then(Value::as_i64)
        && n < 0
    {
        errors.push(FieldError::invalid(&format!("{path}.{field}"), n, NEGATIVE));
    }
}

/// `validateTimeZone`'s verdict on a `timeZone`: the name rules of the tz database, never
/// `Local`, and a zone `time.LoadLocation` finds (kube-apiserver embeds the tz database;
/// this server looks in the system's, and takes any well-formed name without one).
fn time_zone_error(zone: &str) -> Result<(), String> {
    if zone.is_empty() {
        return Err("timeZone must be nil or non-empty string".into());
    }
    let unknown = || format!("unknown time zone {zone}");
    let valid_part = |part: &str| {
        (1..=14).contains(&part.len())
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'+'))
    };
    for part in zone.split('/') {
        if part == "." || part == ".." || part.starts_with('-') || !valid_part(part) {
            return Err(unknown());
        }
    }
    if zone.eq_ignore_ascii_case("Local") {
        return Err(
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
                .into(),
        );
    }
    if !zone_exists(zone) {
        return Err(unknown());
    }
    Ok(())
}

/// Whether `time.LoadLocation` finds `zone`: `UTC`, or a file of the system's zoneinfo (any
/// name when the system has none).
fn zone_exists(zone: &str) -> bool {
    const ZONEINFO: &str = "/usr/share/zoneinfo";
    let root = std::path::Path::new(ZONEINFO);
    zone == "UTC" || !root.is_dir() || root.join(zone).is_file()
}

/// Bounds and names of a cron field, as `robfig/cron/v3` has them.
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [&'static str],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DAYS_OF_MONTH: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
/// Month names map to 1..=12.
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
/// Day names map to 0..=6.
const DAYS_OF_WEEK: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/// `cron.ParseStandard(spec)`: `Ok` or the parser's error text.
pub(crate) fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let eq = spec.find('=').unwrap_or(0);
        // Without a space the parser slices out of range (and panics); read the rest as the
        // location then.
        let end = spec.find(' ').unwrap_or(spec.len());
        let location = spec.get(eq + 1..end).unwrap_or("");
        if !location_exists(location) {
            return Err(format!(
                "provided bad location {location}: unknown time zone {location}"
            ));
        }
        spec = spec[end..].trim();
    }
    if spec.starts_with('@') {
        return parse_descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    for (field, bounds) in
        fields
            .iter()
            .zip([&MINUTES, &HOURS, &DAYS_OF_MONTH, &MONTHS, &DAYS_OF_WEEK])
    {
        for expr in field.split(',').filter(|e| !e.is_empty()) {
            range(expr, bounds)?;
        }
    }
    Ok(())
}

/// `time.LoadLocation` for a `TZ=` prefix: `""`, `UTC` and `Local` always load.
fn location_exists(location: &str) -> bool {
    matches!(location, "" | "UTC" | "Local")
        || (!location.contains("..")
            && !location.starts_with('/')
            && !location.starts_with('\\')
            && zone_exists(location))
}

/// `parseDescriptor`: `@yearly` and the other named schedules, `@every <duration>`.
fn parse_descriptor(descriptor: &str) -> Result<(), String> {
    const NAMED: [&str; 7] = [
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@midnight",
        "@hourly",
    ];
    if NAMED.contains(&descriptor) {
        return Ok(());
    }
    if let Some(duration) = descriptor.strip_prefix("@every ") {
        return parse_go_duration(duration)
            .map_err(|why| format!("failed to parse duration {descriptor}: {why}"));
    }
    Err(format!("unrecognized descriptor: {descriptor}"))
}

/// `getRange`: one comma-separated part of a field (`*`, `?`, `5`, `1-5`, `*/15`, `mon-fri`).
fn range(expr: &str, bounds: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (bounds.min, bounds.max)
    } else {
        let start = int_or_name(low_and_high[0], bounds)?;
        match low_and_high.len() {
            1 => (start, start),
            2 => (start, int_or_name(low_and_high[1], bounds)?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = parse_int(range_and_step[1])?;
            if single {
                end = bounds.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < bounds.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            bounds.min
        ));
    }
    if end > bounds.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            bounds.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

/// `parseIntOrName`: a name of the field (any case) or `mustParseInt`.
fn int_or_name(expr: &str, bounds: &Bounds) -> Result<u64, String> {
    let lower = expr.to_ascii_lowercase();
    if let Some(i) = bounds.names.iter().position(|name| *name == lower) {
        return Ok(i as u64 + bounds.min);
    }
    parse_int(expr)
}

/// `mustParseInt`: `strconv.Atoi` and no negative numbers, with their errors.
fn parse_int(expr: &str) -> Result<u64, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {}: invalid syntax",
            go_quote(expr)
        ));
    }
    let Ok(n) = expr.parse::<i64>() else {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {}: value out of range",
            go_quote(expr)
        ));
    };
    u64::try_from(n).map_err(|_| format!("negative number ({n}) not allowed: {expr}"))
}

/// `time.ParseDuration`'s verdict (`[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`), with its errors.
fn parse_go_duration(s: &str) -> Result<(), String> {
    const UNITS: [(&str, u64); 8] = [
        ("ns", 1),
        ("us", 1_000),
        ("\u{b5}s", 1_000),
        ("\u{3bc}s", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
        ("m", 60_000_000_000),
        ("h", 3_600_000_000_000),
    ];
    let invalid = || format!("time: invalid duration {}", time_quote(s));
    let mut rest = s.strip_prefix(['+', '-']).unwrap_or(s);
    if rest == "0" {
        return Ok(());
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let digits = |t: &str| t.bytes().take_while(u8::is_ascii_digit).count();
        let first = rest.as_bytes()[0];
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid());
        }
        let whole = digits(rest);
        let value: u64 = if whole == 0 {
            0
        } else {
            rest[..whole].parse().map_err(|_| invalid())?
        };
        rest = &rest[whole..];
        let mut fraction = 0;
        if let Some(after) = rest.strip_prefix('.') {
            fraction = digits(after);
            rest = &after[fraction..];
        }
        if whole == 0 && fraction == 0 {
            return Err(invalid());
        }
        let unit_len = rest
            .bytes()
            .take_while(|b| *b != b'.' && !b.is_ascii_digit())
            .count();
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {}", time_quote(s)));
        }
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let Some((_, scale)) = UNITS.iter().find(|(name, _)| *name == unit) else {
            return Err(format!(
                "time: unknown unit {} in duration {}",
                time_quote(unit),
                time_quote(s)
            ));
        };
        total = value
            .checked_mul(*scale)
            .and_then(|v| total.checked_add(v))
            .filter(|v| *v <= 1 << 63)
            .ok_or_else(invalid)?;
    }
    Ok(())
}

/// The `time` package's `quote`: `"`, `\` escaped, other bytes outside printable ASCII as
/// `\xNN`.
fn time_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if (c as u32) < 0x20 || (c as u32) >= 0x80 {
            let mut buf = [0; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// `strconv.Quote` for the printable ASCII a cron field holds.
fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
