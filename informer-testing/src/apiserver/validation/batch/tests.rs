use serde_json::json;

use super::*;

fn cron_errors(object: Value, old: Option<Value>) -> Vec<String> {
    let mut errors = Vec::new();
    cron_job(&object, old.as_ref(), &mut errors);
    errors.iter().map(ToString::to_string).collect()
}

fn job_errors(object: Value) -> Vec<String> {
    let mut errors = Vec::new();
    job(&object, &mut errors);
    errors.iter().map(ToString::to_string).collect()
}

#[test]
fn standard_schedules_parse() {
    for schedule in [
        "*/1 * * * *",
        "0 3 * * *",
        "0 0 1 jan,JUL mon-fri",
        "5/15 1-5 ? * SUN",
        "0 0 * * 0-6/2",
        "@hourly",
        "@every 1h30m",
        "@every 1.5s",
        "@every 0",
        "CRON_TZ=UTC 0 * * * *",
    ] {
        assert_eq!(parse_standard(schedule), Ok(()), "{schedule}");
    }
}

/// The errors `robfig/cron/v3` gives, as the real server quotes them.
#[test]
fn bad_schedules_fail_with_the_cron_parsers_errors() {
    for (schedule, why) in [
        ("bad", "expected exactly 5 fields, found 1: [bad]"),
        (
            "* * * * * *",
            "expected exactly 5 fields, found 6: [* * * * * *]",
        ),
        ("61 * * * *", "end of range (61) above maximum (59): 61"),
        ("* 0 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        (
            "5-1 * * * *",
            "beginning of range (5) beyond end of range (1): 5-1",
        ),
        (
            "x * * * *",
            "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax",
        ),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("*/2/3 * * * *", "too many slashes: */2/3"),
        (
            "*/0 * * * *",
            "step of range should be a positive number: */0",
        ),
        ("*/-1 * * * *", "negative number (-1) not allowed: -1"),
        ("@often", "unrecognized descriptor: @often"),
        (
            "@every 5d",
            "failed to parse duration @every 5d: time: unknown unit \"d\" in duration \"5d\"",
        ),
        (
            "@every 5",
            "failed to parse duration @every 5: time: missing unit in duration \"5\"",
        ),
        (
            "@every x",
            "failed to parse duration @every x: time: invalid duration \"x\"",
        ),
    ] {
        assert_eq!(parse_standard(schedule), Err(why.to_string()), "{schedule}");
    }
}

#[test]
fn a_new_cron_job_needs_a_parsable_schedule_without_a_time_zone_prefix() {
    let cron = |schedule: &str| json!({"metadata": {"name": "c"}, "spec": {"schedule": schedule}});
    assert_eq!(
        cron_errors(cron("bad"), None),
        ["spec.schedule: Invalid value: \"bad\": expected exactly 5 fields, found 1: [bad]"]
    );
    assert_eq!(
        cron_errors(cron("TZ=UTC 0 * * * *"), None),
        [
            "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
        ]
    );
    // An old CronJob whose schedule had one may keep it (but not with `timeZone`).
    let old = cron("TZ=UTC 0 * * * *");
    assert!(cron_errors(cron("TZ=UTC 5 * * * *"), Some(old.clone())).is_empty());
    let both = json!({"metadata": {"name": "c"}, "spec": {"schedule": "TZ=UTC 5 * * * *", "timeZone": "UTC"}});
    assert_eq!(
        cron_errors(both, Some(old)),
        [
            "spec.schedule: Invalid value: \"TZ=UTC 5 * * * *\": cannot use both timeZone field and TZ or CRON_TZ in schedule"
        ]
    );
    assert_eq!(
        cron_errors(cron(""), None),
        ["spec.schedule: Required value"]
    );
}

#[test]
fn a_cron_job_checks_its_time_zone_policy_limits_template_and_name() {
    let object = json!({
        "metadata": {"name": "n".repeat(53)},
        "spec": {
            "schedule": "0 * * * *",
            "startingDeadlineSeconds": -1,
            "timeZone": "Local",
            "concurrencyPolicy": "Sometimes",
            "jobTemplate": {"spec": {
                "selector": {"matchLabels": {"a": "b"}},
                "manualSelector": true,
                "template": {"spec": {"restartPolicy": "Always", "containers": [{"name": "c"}]}},
            }},
            "failedJobsHistoryLimit": -2,
        },
    });
    assert_eq!(
        cron_errors(object, None),
        [
            "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
            "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
            "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
            "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            "spec.jobTemplate.spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\"}}: `selector` will be auto-generated",
            "spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: \"nil\", \"false\"",
            "spec.failedJobsHistoryLimit: Invalid value: -2: must be greater than or equal to 0",
            &format!(
                "metadata.name: Invalid value: \"{}\": must be no more than 52 characters",
                "n".repeat(53)
            ),
        ]
    );
    let zone = |zone: &str| {
        cron_errors(
            json!({"metadata": {"name": "c"}, "spec": {"schedule": "0 * * * *", "timeZone": zone}}),
            None,
        )
    };
    assert!(zone("UTC").is_empty());
    assert_eq!(
        zone("Mars/Olympus_Mons_Base"),
        [
            "spec.timeZone: Invalid value: \"Mars/Olympus_Mons_Base\": unknown time zone Mars/Olympus_Mons_Base"
        ]
    );
    assert_eq!(
        zone(""),
        ["spec.timeZone: Invalid value: \"\": timeZone must be nil or non-empty string"]
    );
}

#[test]
fn a_job_restarts_on_failure_or_never_and_counts_are_not_negative() {
    let job = |policy: &str| {
        json!({"spec": {"parallelism": -1, "completionMode": "Sometimes",
            "template": {"spec": {"restartPolicy": policy, "containers": [{"name": "c"}]}}}})
    };
    assert_eq!(
        job_errors(job("Always")),
        [
            "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
            "spec.completionMode: Unsupported value: \"Sometimes\": supported values: \"NonIndexed\", \"Indexed\"",
            "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
        ]
    );
    // An unknown policy fails the pod spec's check and the Job's.
    assert_eq!(
        job_errors(job("Sometimes"))[2..],
        [
            "spec.template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
            "spec.template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"OnFailure\", \"Never\"",
        ]
    );
    assert_eq!(job_errors(job("Never")).len(), 2);
    // A partial Job (no pod template) is not asked for one.
    assert!(job_errors(json!({"spec": {}})).is_empty());
}
