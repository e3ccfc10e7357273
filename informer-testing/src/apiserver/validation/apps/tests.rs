use serde_json::json;

use super::*;

fn errors_of(spec: Value) -> Vec<String> {
    let mut errors = Vec::new();
    deployment(&json!({"spec": spec}), &mut errors);
    errors.iter().map(ToString::to_string).collect()
}

/// The "Update API Objects in Place Using kubectl patch" task: a patch of the strategy's
/// type alone leaves the old `rollingUpdate` behind, which a `Recreate` Deployment may not
/// have.
#[test]
fn a_recreate_deployment_has_no_rolling_update() {
    assert_eq!(
        errors_of(json!({"strategy": {"type": "Recreate",
            "rollingUpdate": {"maxSurge": "30%", "maxUnavailable": "25%"}}})),
        [
            "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"
        ]
    );
    assert!(errors_of(json!({"strategy": {"type": "Recreate"}})).is_empty());
}

#[test]
fn a_rolling_update_takes_non_negative_numbers_or_percentages_not_both_zero() {
    let rolling = |unavailable: Value, surge: Value| {
        errors_of(json!({"strategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": unavailable, "maxSurge": surge}}}))
    };
    assert!(rolling(json!("25%"), json!(1)).is_empty());
    assert_eq!(
        rolling(json!(0), json!("0%")),
        [
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"
        ]
    );
    assert_eq!(
        rolling(json!("150%"), json!(-1)),
        [
            "spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0",
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%",
        ]
    );
    assert_eq!(
        rolling(json!("half"), json!(1)),
        [format!(
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"half\": {PERCENT}"
        )]
    );
}

#[test]
fn the_progress_deadline_is_longer_than_min_ready_seconds() {
    assert_eq!(
        errors_of(
            json!({"minReadySeconds": 600, "progressDeadlineSeconds": 600, "revisionHistoryLimit": -1})
        ),
        [
            "spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
            "spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds",
        ]
    );
}
