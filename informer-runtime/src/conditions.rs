//! Status conditions: apimachinery's condition helpers (`k8s.io/apimachinery/pkg/api/meta`,
//! `conditions.go` as of v0.36), the ones controller-runtime users call as
//! `meta.SetStatusCondition`, for a status that keeps a `Vec<Condition>` (k8s-openapi's
//! [`Condition`], the API's `metav1.Condition`).
//!
//! | Go | here |
//! | --- | --- |
//! | `SetStatusCondition` | [`set_status_condition`] |
//! | `RemoveStatusCondition` | [`remove_status_condition`] |
//! | `FindStatusCondition` | [`find_status_condition`], [`find_status_condition_mut`] |
//! | `IsStatusConditionTrue` | [`is_status_condition_true`] |
//! | `IsStatusConditionFalse` | [`is_status_condition_false`] |
//! | `IsStatusConditionPresentAndEqual` | [`is_status_condition_present_and_equal`] |
//! | `metav1.ConditionTrue`, `ConditionFalse`, `ConditionUnknown` | [`CONDITION_TRUE`], [`CONDITION_FALSE`], [`CONDITION_UNKNOWN`] |
//!
//! Guarantees, the same as Go's:
//!
//! - A condition is identified by its `type_`, compared exactly (case-sensitive). The list
//!   keeps its order: a new type is appended at the end, an existing one is updated in place.
//! - `last_transition_time` changes only when `status` changes: [`set_status_condition`] keeps
//!   the existing time when the status is the same (whatever time the new condition carries),
//!   and on a change of status takes the new condition's time, or now when that is unset
//!   ([`is_unset_time`]). A new type keeps its own time, or gets now when it is unset.
//! - [`set_status_condition`] and [`remove_status_condition`] return whether the list changed,
//!   so that a reconcile writes the status only when it has to.
//!
//! Status values are the strings `"True"`, `"False"` and `"Unknown"`, as in k8s-openapi;
//! they are compared exactly (`"true"` is not `"True"`).
//!
//! A type that appears more than once (the API server refuses it for a list marked
//! `+listType=map`, but a status built by hand may have it): the functions that read or
//! update look at the first one only; [`remove_status_condition`] removes them all.
//!
//! ```
//! use informer_runtime::conditions::{
//!     CONDITION_FALSE, CONDITION_TRUE, UNSET_TIME, find_status_condition,
//!     is_status_condition_true, set_status_condition,
//! };
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
//!
//! fn ready(status: &str, reason: &str, generation: i64) -> Condition {
//!     Condition {
//!         type_: "Ready".into(),
//!         status: status.into(),
//!         reason: reason.into(),
//!         message: String::new(),
//!         observed_generation: Some(generation),
//!         // Unset: set_status_condition puts the time of the transition.
//!         last_transition_time: UNSET_TIME,
//!     }
//! }
//!
//! let mut conditions: Vec<Condition> = Vec::new();
//! assert!(set_status_condition(&mut conditions, ready(CONDITION_FALSE, "Deploying", 1)));
//! let since = find_status_condition(&conditions, "Ready").unwrap().last_transition_time.clone();
//! assert_ne!(since, UNSET_TIME);
//!
//! // Nothing new: nothing to write.
//! assert!(!set_status_condition(&mut conditions, ready(CONDITION_FALSE, "Deploying", 1)));
//! // A new reason keeps the transition time (the status is still False).
//! assert!(set_status_condition(&mut conditions, ready(CONDITION_FALSE, "Scaling", 2)));
//! assert_eq!(conditions[0].last_transition_time, since);
//! // A new status is a transition.
//! assert!(set_status_condition(&mut conditions, ready(CONDITION_TRUE, "Available", 2)));
//! assert!(conditions[0].last_transition_time >= since);
//! assert!(is_status_condition_true(&conditions, "Ready"));
//! ```
//!
//! A status whose conditions are an `Option<Vec<Condition>>` (as in k8s-openapi's own
//! statuses) passes `status.conditions.get_or_insert_with(Vec::new)`.
//!
//! In a custom resource's status (kube's `#[derive(CustomResource)]`, which needs a
//! `JsonSchema` of every field), give the `Vec<Condition>` field
//! `#[schemars(schema_with = "informer::runtime::conditions::schema")]` (the `schemars`
//! feature of `informer`): the schema controller-gen writes for `[]metav1.Condition`.
//! k8s-openapi's own `schemars` feature works too, but rebuilds k8s-openapi and every crate
//! above it. A `Time` beside them (a `last_backup_time: Option<Time>`) takes
//! `#[schemars(schema_with = "informer::runtime::conditions::time_schema")]`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// The status of a condition that holds (`metav1.ConditionTrue`).
pub const CONDITION_TRUE: &str = "True";
/// The status of a condition that does not hold (`metav1.ConditionFalse`).
pub const CONDITION_FALSE: &str = "False";
/// The status of a condition the controller cannot decide (`metav1.ConditionUnknown`).
pub const CONDITION_UNKNOWN: &str = "Unknown";

/// A `last_transition_time` that means "not set": [`set_status_condition`] replaces it with
/// the current time where it would use the new condition's time. It is the Unix epoch,
/// `Time(Timestamp::default())`; see [`is_unset_time`].
pub const UNSET_TIME: Time = Time(Timestamp::UNIX_EPOCH);

/// Go's zero `time.Time`, 0001-01-01T00:00:00Z.
const GO_ZERO_TIME: Timestamp = Timestamp::constant(-62_135_596_800, 0);

/// Whether `time` counts as unset (Go's `LastTransitionTime.IsZero()`): the Unix epoch
/// ([`UNSET_TIME`], jiff's default `Timestamp`), or Go's zero time 0001-01-01T00:00:00Z.
///
/// k8s-openapi's [`Condition`] has no optional or default time, so the Unix epoch stands in
/// for Go's zero value; Go's own zero is accepted too. Any other time is set.
///
/// ```
/// use informer_runtime::conditions::{UNSET_TIME, is_unset_time};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
/// use k8s_openapi::jiff::Timestamp;
///
/// assert!(is_unset_time(&UNSET_TIME));
/// assert!(is_unset_time(&Time(Timestamp::default())));
/// assert!(!is_unset_time(&Time(Timestamp::now())));
/// ```
pub fn is_unset_time(time: &Time) -> bool {
    time.0 == Timestamp::UNIX_EPOCH || time.0 == GO_ZERO_TIME
}

/// Puts `new_condition` into `conditions` and returns whether anything changed (Go's
/// `SetStatusCondition`).
///
/// - No condition of its type yet: `new_condition` is appended (its time, when unset, becomes
///   now); returns `true`.
/// - Otherwise the first condition of that type is updated in place:
///   - `status` differs: it takes the new status, and `last_transition_time` becomes the new
///     condition's time, or now when that is unset;
///   - `status` is the same: `last_transition_time` is kept, whatever the new condition's is;
///   - `reason`, `message` and `observed_generation` take the new values.
///
///   Returns `true` when one of `status`, `reason`, `message` and `observed_generation`
///   differed, `false` when the call left the list as it was.
///
/// `observed_generation`: `None` and `Some(0)` are the same value, as Go's `int64` with
/// `omitempty` (`0` is also what the API server keeps for a missing one); passing one where
/// the other is stored is no change and leaves the stored value.
///
/// "Now" is [`Timestamp::now`], kept to the nanosecond as Go's `time.Now()` is; the API keeps
/// whole seconds.
pub fn set_status_condition(conditions: &mut Vec<Condition>, mut new_condition: Condition) -> bool {
    let Some(existing) = find_status_condition_mut(conditions, &new_condition.type_) else {
        if is_unset_time(&new_condition.last_transition_time) {
            new_condition.last_transition_time = Time(Timestamp::now());
        }
        conditions.push(new_condition);
        return true;
    };

    let mut changed = false;
    if existing.status != new_condition.status {
        existing.status = new_condition.status;
        existing.last_transition_time = if is_unset_time(&new_condition.last_transition_time) {
            Time(Timestamp::now())
        } else {
            new_condition.last_transition_time
        };
        changed = true;
    }
    if existing.reason != new_condition.reason {
        existing.reason = new_condition.reason;
        changed = true;
    }
    if existing.message != new_condition.message {
        existing.message = new_condition.message;
        changed = true;
    }
    if existing.observed_generation.unwrap_or(0) != new_condition.observed_generation.unwrap_or(0) {
        existing.observed_generation = new_condition.observed_generation;
        changed = true;
    }
    changed
}

/// Removes every condition of type `condition_type` and returns whether there was one (Go's
/// `RemoveStatusCondition`). The others keep their order.
pub fn remove_status_condition(conditions: &mut Vec<Condition>, condition_type: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|condition| condition.type_ != condition_type);
    conditions.len() != before
}

/// The first condition of type `condition_type`, if any (Go's `FindStatusCondition`).
pub fn find_status_condition<'a>(
    conditions: &'a [Condition],
    condition_type: &str,
) -> Option<&'a Condition> {
    conditions
        .iter()
        .find(|condition| condition.type_ == condition_type)
}

/// The first condition of type `condition_type`, to change in place (Go's
/// `FindStatusCondition` returns a pointer into the slice). Changing it directly skips the
/// rules of [`set_status_condition`] on `last_transition_time`.
pub fn find_status_condition_mut<'a>(
    conditions: &'a mut [Condition],
    condition_type: &str,
) -> Option<&'a mut Condition> {
    conditions
        .iter_mut()
        .find(|condition| condition.type_ == condition_type)
}

/// Whether the condition of type `condition_type` is present with status
/// [`CONDITION_TRUE`] (Go's `IsStatusConditionTrue`). Absent or `"Unknown"`: `false`.
pub fn is_status_condition_true(conditions: &[Condition], condition_type: &str) -> bool {
    is_status_condition_present_and_equal(conditions, condition_type, CONDITION_TRUE)
}

/// Whether the condition of type `condition_type` is present with status
/// [`CONDITION_FALSE`] (Go's `IsStatusConditionFalse`). Absent or `"Unknown"`: `false`, so
/// this is not `!is_status_condition_true`.
pub fn is_status_condition_false(conditions: &[Condition], condition_type: &str) -> bool {
    is_status_condition_present_and_equal(conditions, condition_type, CONDITION_FALSE)
}

/// Whether the first condition of type `condition_type` is present and its status is
/// `status`, compared exactly (Go's `IsStatusConditionPresentAndEqual`). Absent: `false`.
pub fn is_status_condition_present_and_equal(
    conditions: &[Condition],
    condition_type: &str,
    status: &str,
) -> bool {
    find_status_condition(conditions, condition_type)
        .is_some_and(|condition| condition.status == status)
}

#[cfg(test)]
mod tests;

/// `metav1.Condition`'s schema, as controller-gen writes it for a `[]metav1.Condition` field
/// (a list keyed by `type`; the required fields, the reason's and type's patterns and
/// lengths, the status values), for a custom resource's status that keeps conditions:
/// `#[schemars(schema_with = "informer::runtime::conditions::schema")]` on its
/// `Vec<Condition>`. No need for k8s-openapi's `schemars` feature, which rebuilds
/// k8s-openapi and everything above it. Needs the `schemars` feature of `informer`.
///
/// ```
/// use informer_runtime::conditions;
///
/// let schema = conditions::schema(&mut schemars::SchemaGenerator::default());
/// let schema = serde_json::to_value(&schema).unwrap();
/// assert_eq!(schema["x-kubernetes-list-type"], "map");
/// assert_eq!(schema["items"]["properties"]["status"]["enum"][0], "True");
/// ```
#[cfg(feature = "schemars")]
pub fn schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "description": "Condition contains details for one aspect of the current state of this API Resource.",
            "type": "object",
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
            "properties": {
                "lastTransitionTime": {"type": "string", "format": "date-time"},
                "message": {"type": "string", "maxLength": 32768},
                "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
                "reason": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 1024,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
                },
                "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                "type": {
                    "type": "string",
                    "maxLength": 316,
                    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
                }
            }
        }
    })
}

/// `metav1.Time`'s schema (and `MicroTime`'s), as controller-gen writes it: a string of
/// format `date-time`. For a `Time` field of a custom resource's spec or status, such as
/// the time of the last backup beside its conditions:
/// `#[schemars(schema_with = "informer::runtime::conditions::time_schema")]` on an
/// `Option<Time>` (with `#[serde(default, skip_serializing_if = "Option::is_none")]`, so
/// that an absent time is left out rather than written as `null`). Needs the `schemars`
/// feature of `informer`.
///
/// ```
/// use informer_runtime::conditions;
///
/// let schema = conditions::time_schema(&mut schemars::SchemaGenerator::default());
/// let schema = serde_json::to_value(&schema).unwrap();
/// assert_eq!(schema, serde_json::json!({"type": "string", "format": "date-time"}));
/// ```
#[cfg(feature = "schemars")]
pub fn time_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "format": "date-time"})
}
