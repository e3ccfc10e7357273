//! A status's `conditions` as the registries and controllers keep them (apimachinery's
//! `meta.SetStatusCondition`, `SetCRDCondition`, `podutil.UpdatePodCondition`, the
//! namespace and disruption controllers): one condition per type, a new one appended, its
//! `lastTransitionTime` moved only when its status changes.

use serde_json::{Value, json};

use super::time::now_rfc3339;

/// The condition of type `kind` in `conditions` (made an empty list if it is not a list),
/// appended if missing, with its `status` set to `status` and its `lastTransitionTime` to
/// now if the status changed (or the condition is new). The caller sets the rest (reason,
/// message, ...).
pub(crate) fn set_status<'a>(conditions: &'a mut Value, kind: &str, status: &str) -> &'a mut Value {
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Value::Array(list) = conditions else {
        unreachable!("made a list above");
    };
    let at = match list
        .iter()
        .position(|c| c.get("type").and_then(Value::as_str) == Some(kind))
    {
        Some(at) => at,
        None => {
            list.push(json!({ "type": kind }));
            list.len() - 1
        }
    };
    let condition = &mut list[at];
    if condition.get("status").and_then(Value::as_str) != Some(status) {
        condition["status"] = json!(status);
        condition["lastTransitionTime"] = json!(now_rfc3339());
    }
    condition
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::set_status;

    #[test]
    fn a_new_type_is_appended_with_its_transition_time() {
        let mut conditions = json!([{"type": "A", "status": "True"}]);
        set_status(&mut conditions, "B", "False")["reason"] = json!("Why");
        assert_eq!(conditions[1]["type"], "B");
        assert_eq!(conditions[1]["status"], "False");
        assert_eq!(conditions[1]["reason"], "Why");
        assert!(conditions[1]["lastTransitionTime"].is_string());
    }

    #[test]
    fn the_transition_time_moves_only_with_the_status() {
        let mut conditions = json!([{"type": "A", "status": "True", "lastTransitionTime": "then"}]);
        set_status(&mut conditions, "A", "True");
        assert_eq!(conditions[0]["lastTransitionTime"], "then");
        set_status(&mut conditions, "A", "False");
        assert_ne!(conditions[0]["lastTransitionTime"], "then");
        assert_eq!(conditions.as_array().unwrap().len(), 1);
    }

    #[test]
    fn anything_but_a_list_becomes_one() {
        let mut conditions = json!(null);
        set_status(&mut conditions, "A", "True");
        assert_eq!(conditions.as_array().unwrap().len(), 1);
    }
}
