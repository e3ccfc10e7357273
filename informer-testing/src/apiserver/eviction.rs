//! A Pod's `eviction` subresource (`policy/v1` Eviction; `kubectl drain`), as kube-apiserver's
//! eviction REST handler answers it:
//! - a Pod that is `Pending`, `Succeeded` or `Failed`, or already being deleted, is deleted
//!   without consulting disruption budgets (every Pod here is `Pending` unless a client wrote
//!   its status: no kubelet runs them);
//! - otherwise the PodDisruptionBudgets of its namespace whose selector matches it decide:
//!   none, it is deleted; more than one, `500`; one that the disruption controller has not
//!   caught up with (`status.observedGeneration` behind `metadata.generation`) or that allows
//!   no disruption (`status.disruptionsAllowed`), `429` with a `DisruptionBudget` cause (the
//!   former with `Retry-After: 10`); one whose `disruptionsAllowed` is negative, `403`; one
//!   that allows it, the budget's `disruptionsAllowed` goes down by one (its
//!   `DisruptionAllowed` condition turning `False` at zero) and records the Pod in
//!   `disruptedPods`, and the Pod is deleted.
//!
//! No disruption controller runs here: a budget's status is what clients write to it.

use std::time::Duration;

use serde_json::{Value, json};

use super::conditions;
use super::resource::Registry;
use super::scale::selector_string;
use super::selector::LabelSelector;
use super::status::{ApiError, StatusReason, created_status};
use super::storage::{DeleteOptions, Store, Subresource, WriteOptions};
use super::str_at;
use super::time::now_rfc3339;

/// The field manager of the budget's status writes (kube-apiserver's own).
const MANAGER: &str = "kube-apiserver";

/// The retry a `429` suggests while the disruption controller has not processed a budget
/// (`createTooManyRequestsError` in `pkg/registry/core/pod/storage/eviction.go`).
const PDB_PROCESSING_RETRY: Duration = Duration::from_secs(10);

/// Evicts Pod `namespace/name` as `eviction` (the request's body, already decoded) asks,
/// deleting it with `options`; returns the `Status` to answer `201` with.
pub(crate) fn evict(
    store: &mut Store,
    registry: &Registry,
    namespace: &str,
    name: &str,
    eviction: &Value,
    options: &DeleteOptions,
    dry_run: bool,
) -> Result<Value, ApiError> {
    let asked = str_at(eviction, "/metadata/name");
    if asked != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let pods = registry
        .by_path("", "v1", "pods")
        .ok_or_else(|| ApiError::internal("pods are not served"))?;
    let pod = store.get(&pods, Some(namespace), name)?;
    let phase = str_at(&pod, "/status/phase");
    let deleting = pod.pointer("/metadata/deletionTimestamp").is_some();
    if !deleting && !matches!(phase, "Pending" | "Succeeded" | "Failed") {
        check_budget(store, registry, namespace, &pod, dry_run)?;
    }
    store.delete(&pods, Some(namespace), name, options, dry_run)?;
    Ok(created_status())
}

/// The disruption budget's word on evicting `pod`; takes one disruption from it if it allows
/// one.
fn check_budget(
    store: &mut Store,
    registry: &Registry,
    namespace: &str,
    pod: &Value,
    dry_run: bool,
) -> Result<(), ApiError> {
    let Some(budgets) = registry.by_path("policy", "v1", "poddisruptionbudgets") else {
        return Ok(());
    };
    let labels = pod.pointer("/metadata/labels");
    let mut matching = Vec::new();
    for budget in store.objects_in(&budgets, namespace) {
        // A budget without a selector selects nothing; an empty one, every Pod.
        let Some(selector) = budget.pointer("/spec/selector").and_then(Value::as_object) else {
            continue;
        };
        let Ok(selector) = LabelSelector::parse(&selector_string(selector)) else {
            continue;
        };
        if selector.matches(|key| labels.and_then(|l| l.get(key)).and_then(Value::as_str)) {
            matching.push(budget);
        }
    }
    let budget = match matching.as_slice() {
        [] => return Ok(()),
        [budget] => budget,
        _ => {
            return Err(ApiError::internal(
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ));
        }
    };
    let budget_name = str_at(budget, "/metadata/name");
    let number = |pointer: &str| budget.pointer(pointer).and_then(Value::as_i64).unwrap_or(0);
    // A budget its controller has not seen yet suggests a retry in 10 s (`Retry-After` and
    // `retryAfterSeconds`, `createTooManyRequestsError`); one without disruptions left, none.
    let refusal = if number("/status/observedGeneration") < number("/metadata/generation") {
        Some((
            format!("The disruption budget {budget_name} is still being processed by the server."),
            Some(PDB_PROCESSING_RETRY),
        ))
    } else if number("/status/disruptionsAllowed") < 0 {
        return Err(ApiError::new(
            StatusReason::Forbidden,
            format!(
                "poddisruptionbudget.policy \"{budget_name}\" is forbidden: pdb disruptions allowed is negative"
            ),
        )
        .with_details(
            json!({"name": budget_name, "group": "policy", "kind": "poddisruptionbudget"}),
        ));
    } else if number("/status/disruptionsAllowed") == 0 {
        Some((
            format!(
                "The disruption budget {budget_name} needs {} healthy pods and has {} currently",
                number("/status/desiredHealthy"),
                number("/status/currentHealthy")
            ),
            None,
        ))
    } else {
        None
    };
    if let Some((cause, retry_after)) = refusal {
        let err = ApiError::new(
            StatusReason::TooManyRequests,
            "Cannot evict pod as it would violate the pod's disruption budget.",
        )
        .with_details(json!({"causes": [{"reason": "DisruptionBudget", "message": cause}]}));
        return Err(match retry_after {
            Some(retry_after) => err.with_retry_after(retry_after),
            None => err,
        });
    }
    let mut updated = Value::clone(budget);
    let allowed = number("/status/disruptionsAllowed") - 1;
    updated["status"]["disruptionsAllowed"] = json!(allowed);
    if allowed == 0 {
        disruption_not_allowed(&mut updated["status"]);
    }
    let pod_name = str_at(pod, "/metadata/name").to_string();
    match updated["status"]
        .get_mut("disruptedPods")
        .and_then(Value::as_object_mut)
    {
        Some(disrupted) => {
            disrupted.insert(pod_name, json!(now_rfc3339()));
        }
        None => updated["status"]["disruptedPods"] = json!({ pod_name: now_rfc3339() }),
    }
    let mut options = WriteOptions::by(MANAGER);
    options.dry_run = dry_run;
    let budget_name = budget_name.to_string();
    store.update(
        &budgets,
        Some(namespace),
        &budget_name,
        updated,
        Subresource::Status,
        options,
    )?;
    Ok(())
}

/// `pdbhelper.UpdateDisruptionAllowedCondition` once the last allowed disruption is taken:
/// the `DisruptionAllowed` condition becomes `False` (`InsufficientPods`), as
/// `meta.SetStatusCondition` sets it (its transition time changes only with its status).
fn disruption_not_allowed(status: &mut Value) {
    let observed = status
        .get("observedGeneration")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let condition = conditions::set_status(&mut status["conditions"], "DisruptionAllowed", "False");
    condition["reason"] = json!("InsufficientPods");
    condition["message"] = json!("");
    match condition.as_object_mut() {
        Some(fields) if observed == 0 => {
            fields.remove("observedGeneration");
        }
        _ => condition["observedGeneration"] = json!(observed),
    }
}
