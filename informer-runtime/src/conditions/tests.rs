//! The cases of apimachinery's `conditions_test.go`, one test per rule, then the rules it
//! leaves out.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use super::*;

const HOUR: Duration = Duration::from_secs(3600);

/// Go's `metav1.Condition{Type: type_}`: every other field at its zero value.
fn cond(type_: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: String::new(),
        reason: String::new(),
        message: String::new(),
        observed_generation: None,
        last_transition_time: UNSET_TIME,
    }
}

fn with_status(type_: &str, status: &str) -> Condition {
    Condition {
        status: status.into(),
        ..cond(type_)
    }
}

fn full(type_: &str, status: &str, time: Timestamp, generation: Option<i64>) -> Condition {
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: "reason".into(),
        message: "message".into(),
        observed_generation: generation,
        last_transition_time: Time(time),
    }
}

fn types(conditions: &[Condition]) -> Vec<&str> {
    conditions.iter().map(|c| c.type_.as_str()).collect()
}

/// Checks that `time` lies between two readings of the clock taken around the call.
fn assert_now(before: Timestamp, time: &Time, after: Timestamp) {
    assert!(
        before <= time.0 && time.0 <= after,
        "{} not in [{before}, {after}]",
        time.0
    );
}

// --- conditions_test.go: TestSetStatusCondition ---

/// "should-add": a new type is appended at the end with its supplied time.
#[test]
fn set_appends_a_new_type_at_the_end_with_its_supplied_time() {
    let hour_before = Timestamp::now() - HOUR;
    let mut conditions = vec![cond("first"), cond("third")];
    let to_add = full("second", CONDITION_TRUE, hour_before, None);

    assert!(set_status_condition(&mut conditions, to_add.clone()));
    assert_eq!(conditions, vec![cond("first"), cond("third"), to_add]);
}

/// "use-supplied-time": a change of status takes the new condition's time.
#[test]
fn set_on_status_change_takes_the_supplied_transition_time() {
    let hour_before = Timestamp::now() - HOUR;
    let mut conditions = vec![
        cond("first"),
        with_status("second", CONDITION_FALSE),
        cond("third"),
    ];
    let to_add = full("second", CONDITION_TRUE, hour_before, None);

    assert!(set_status_condition(&mut conditions, to_add.clone()));
    assert_eq!(conditions, vec![cond("first"), to_add, cond("third")]);
}

/// "update-fields": same status, so the existing time stays (the new one is ignored) while
/// reason, message and observed generation are updated.
#[test]
fn set_with_same_status_keeps_transition_time_and_updates_the_other_fields() {
    let hour_before = Timestamp::now() - HOUR;
    let hour_after = Timestamp::now() + HOUR;
    let mut conditions = vec![
        cond("first"),
        Condition {
            last_transition_time: Time(hour_before),
            ..with_status("second", CONDITION_TRUE)
        },
        cond("third"),
    ];
    let to_add = full("second", CONDITION_TRUE, hour_after, Some(3));

    assert!(set_status_condition(&mut conditions, to_add));
    assert_eq!(
        conditions,
        vec![
            cond("first"),
            full("second", CONDITION_TRUE, hour_before, Some(3)),
            cond("third"),
        ]
    );
}

// --- conditions_test.go: TestRemoveStatusCondition ---

/// "present": the type is removed, the others keep their order.
#[test]
fn remove_drops_the_type_and_keeps_the_order_of_the_rest() {
    let mut conditions = vec![cond("first"), cond("second"), cond("third")];
    assert!(remove_status_condition(&mut conditions, "second"));
    assert_eq!(conditions, vec![cond("first"), cond("third")]);
}

/// "not-present": nothing removed, `false`.
#[test]
fn remove_of_an_absent_type_leaves_the_list_and_returns_false() {
    let mut conditions = vec![cond("first"), cond("second"), cond("third")];
    assert!(!remove_status_condition(&mut conditions, "fourth"));
    assert_eq!(
        conditions,
        vec![cond("first"), cond("second"), cond("third")]
    );
}

/// "empty_conditions": an empty list stays empty, `false`.
#[test]
fn remove_from_an_empty_list_returns_false() {
    let mut conditions = Vec::new();
    assert!(!remove_status_condition(&mut conditions, "Foo"));
    assert!(conditions.is_empty());
}

// --- conditions_test.go: TestFindStatusCondition ---

/// "not-present".
#[test]
fn find_of_an_absent_type_is_none() {
    let conditions = vec![cond("first")];
    assert_eq!(find_status_condition(&conditions, "second"), None);
}

/// "present".
#[test]
fn find_returns_the_condition_of_that_type() {
    let conditions = vec![cond("first"), cond("second")];
    assert_eq!(
        find_status_condition(&conditions, "second"),
        Some(&cond("second"))
    );
}

// --- conditions_test.go: TestIsStatusConditionPresentAndEqual ---

/// "doesnt-match-true": Unknown is not True.
#[test]
fn present_and_equal_is_false_for_another_status() {
    let conditions = vec![with_status("first", CONDITION_UNKNOWN)];
    assert!(!is_status_condition_present_and_equal(
        &conditions,
        "first",
        CONDITION_TRUE
    ));
}

/// "does-match-true".
#[test]
fn present_and_equal_is_true_for_true() {
    let conditions = vec![with_status("first", CONDITION_TRUE)];
    assert!(is_status_condition_present_and_equal(
        &conditions,
        "first",
        CONDITION_TRUE
    ));
}

/// "does-match-false".
#[test]
fn present_and_equal_is_true_for_false() {
    let conditions = vec![with_status("first", CONDITION_FALSE)];
    assert!(is_status_condition_present_and_equal(
        &conditions,
        "first",
        CONDITION_FALSE
    ));
}

// --- Rules conditions_test.go leaves out: set ---

#[test]
fn set_appends_to_an_empty_list() {
    let hour_before = Timestamp::now() - HOUR;
    let mut conditions = Vec::new();
    let to_add = full("first", CONDITION_TRUE, hour_before, None);
    assert!(set_status_condition(&mut conditions, to_add.clone()));
    assert_eq!(conditions, vec![to_add]);
}

#[test]
fn set_gives_a_new_type_without_time_the_current_time() {
    for unset in [UNSET_TIME, Time(GO_ZERO_TIME)] {
        let mut conditions = vec![cond("first")];
        let before = Timestamp::now();
        let changed = set_status_condition(
            &mut conditions,
            Condition {
                last_transition_time: unset,
                ..with_status("second", CONDITION_TRUE)
            },
        );
        let after = Timestamp::now();
        assert!(changed);
        assert_eq!(types(&conditions), ["first", "second"]);
        assert_now(before, &conditions[1].last_transition_time, after);
    }
}

#[test]
fn set_on_status_change_without_time_takes_the_current_time() {
    let hour_before = Timestamp::now() - HOUR;
    let mut conditions = vec![full("Ready", CONDITION_FALSE, hour_before, None)];
    let before = Timestamp::now();
    let changed = set_status_condition(
        &mut conditions,
        Condition {
            last_transition_time: UNSET_TIME,
            ..full("Ready", CONDITION_TRUE, hour_before, None)
        },
    );
    let after = Timestamp::now();
    assert!(changed);
    assert_eq!(conditions[0].status, CONDITION_TRUE);
    assert_now(before, &conditions[0].last_transition_time, after);
}

#[test]
fn set_with_same_status_keeps_transition_time_when_new_time_is_unset() {
    let hour_before = Timestamp::now() - HOUR;
    let mut conditions = vec![full("Ready", CONDITION_TRUE, hour_before, None)];
    let changed = set_status_condition(
        &mut conditions,
        Condition {
            reason: "Other".into(),
            last_transition_time: UNSET_TIME,
            ..full("Ready", CONDITION_TRUE, hour_before, None)
        },
    );
    assert!(changed);
    assert_eq!(conditions[0].reason, "Other");
    assert_eq!(conditions[0].last_transition_time, Time(hour_before));
}

#[test]
fn set_of_the_same_condition_changes_nothing_and_returns_false() {
    let hour_before = Timestamp::now() - HOUR;
    let existing = full("Ready", CONDITION_TRUE, hour_before, Some(2));
    let mut conditions = vec![cond("first"), existing.clone()];
    // Only the time differs: not a change, the time is kept.
    let again = Condition {
        last_transition_time: Time(Timestamp::now()),
        ..existing.clone()
    };
    assert!(!set_status_condition(&mut conditions, again));
    assert_eq!(conditions, vec![cond("first"), existing]);
}

#[test]
fn set_reports_a_change_of_any_one_of_status_reason_message_generation() {
    let hour_before = Timestamp::now() - HOUR;
    let existing = full("Ready", CONDITION_TRUE, hour_before, Some(2));
    let variants = [
        Condition {
            status: CONDITION_UNKNOWN.into(),
            ..existing.clone()
        },
        Condition {
            reason: "Other".into(),
            ..existing.clone()
        },
        Condition {
            message: "other".into(),
            ..existing.clone()
        },
        Condition {
            observed_generation: Some(3),
            ..existing.clone()
        },
        Condition {
            observed_generation: None,
            ..existing.clone()
        },
    ];
    for new in variants {
        let mut conditions = vec![existing.clone()];
        assert!(
            set_status_condition(&mut conditions, new.clone()),
            "{new:?}"
        );
        assert_eq!(conditions, vec![new]);
    }
}

#[test]
fn set_treats_missing_and_zero_observed_generation_as_equal() {
    let hour_before = Timestamp::now() - HOUR;
    for (stored, given) in [(None, Some(0)), (Some(0), None)] {
        let existing = full("Ready", CONDITION_TRUE, hour_before, stored);
        let mut conditions = vec![existing.clone()];
        let new = full("Ready", CONDITION_TRUE, hour_before, given);
        assert!(!set_status_condition(&mut conditions, new));
        assert_eq!(conditions, vec![existing]);
    }
}

#[test]
fn set_updates_only_the_first_of_duplicate_types() {
    let hour_before = Timestamp::now() - HOUR;
    let mut conditions = vec![
        with_status("Ready", CONDITION_FALSE),
        with_status("Ready", CONDITION_FALSE),
    ];
    let new = full("Ready", CONDITION_TRUE, hour_before, None);
    assert!(set_status_condition(&mut conditions, new.clone()));
    assert_eq!(conditions, vec![new, with_status("Ready", CONDITION_FALSE)]);
}

#[test]
fn set_matches_types_case_sensitively() {
    let mut conditions = vec![with_status("Ready", CONDITION_TRUE)];
    assert!(set_status_condition(
        &mut conditions,
        with_status("ready", CONDITION_TRUE)
    ));
    assert_eq!(types(&conditions), ["Ready", "ready"]);
}

// --- Rules conditions_test.go leaves out: remove, find, is_* ---

#[test]
fn remove_drops_every_condition_of_the_type() {
    let mut conditions = vec![cond("a"), cond("b"), cond("a"), cond("c")];
    assert!(remove_status_condition(&mut conditions, "a"));
    assert_eq!(types(&conditions), ["b", "c"]);
}

#[test]
fn find_returns_the_first_of_duplicate_types() {
    let conditions = vec![
        with_status("Ready", CONDITION_TRUE),
        with_status("Ready", CONDITION_FALSE),
    ];
    let found = find_status_condition(&conditions, "Ready").unwrap();
    assert_eq!(found.status, CONDITION_TRUE);
}

#[test]
fn find_mut_changes_the_condition_in_place() {
    let mut conditions = vec![cond("first"), cond("second")];
    find_status_condition_mut(&mut conditions, "second")
        .unwrap()
        .message = "edited".into();
    assert_eq!(conditions[1].message, "edited");
    assert!(find_status_condition_mut(&mut conditions, "third").is_none());
}

#[test]
fn present_and_equal_is_false_for_an_absent_type() {
    let conditions = vec![with_status("first", CONDITION_TRUE)];
    assert!(!is_status_condition_present_and_equal(
        &conditions,
        "second",
        CONDITION_TRUE
    ));
    assert!(!is_status_condition_present_and_equal(
        &[],
        "first",
        CONDITION_TRUE
    ));
}

#[test]
fn present_and_equal_looks_at_the_first_of_duplicate_types() {
    let conditions = vec![
        with_status("Ready", CONDITION_FALSE),
        with_status("Ready", CONDITION_TRUE),
    ];
    assert!(!is_status_condition_true(&conditions, "Ready"));
    assert!(is_status_condition_false(&conditions, "Ready"));
}

#[test]
fn present_and_equal_compares_status_exactly() {
    let conditions = vec![with_status("Ready", "true")];
    assert!(!is_status_condition_true(&conditions, "Ready"));
    assert!(is_status_condition_present_and_equal(
        &conditions,
        "Ready",
        "true"
    ));
}

#[test]
fn is_true_and_is_false_follow_the_status() {
    let conditions = vec![
        with_status("T", CONDITION_TRUE),
        with_status("F", CONDITION_FALSE),
    ];
    assert!(is_status_condition_true(&conditions, "T"));
    assert!(!is_status_condition_false(&conditions, "T"));
    assert!(is_status_condition_false(&conditions, "F"));
    assert!(!is_status_condition_true(&conditions, "F"));
}

#[test]
fn is_true_and_is_false_are_both_false_for_unknown_or_absent() {
    let conditions = vec![with_status("U", CONDITION_UNKNOWN)];
    for type_ in ["U", "absent"] {
        assert!(!is_status_condition_true(&conditions, type_));
        assert!(!is_status_condition_false(&conditions, type_));
    }
}

#[test]
fn unset_time_is_the_unix_epoch_or_go_zero_time() {
    assert!(is_unset_time(&UNSET_TIME));
    assert!(is_unset_time(&Time(Timestamp::default())));
    assert!(is_unset_time(&Time(
        "0001-01-01T00:00:00Z".parse().unwrap()
    )));
    assert!(!is_unset_time(&Time(
        Timestamp::UNIX_EPOCH + Duration::from_secs(1)
    )));
    assert!(!is_unset_time(&Time(Timestamp::now())));
}
