//! The Pod subresources a kubelet would answer, as kube-apiserver answers them when the Pod
//! has no node or the kubelet is out of reach (there is none here), and `binding`, which a
//! scheduler writes:
//! - `log` (`kubectl logs`): the container named or the only one (400 otherwise, with the
//!   server's message); the text a test set with [`TestApiServer::set_pod_log`] (empty
//!   without), as a Pod with no node answers empty; `tailLines` and `limitBytes` apply;
//! - `exec`, `attach`, `portforward`: 400 `pod <name> does not have a host assigned` for a
//!   Pod with no node, and otherwise 500, as a cluster whose kubelet cannot be dialled;
//! - `binding` (a `Binding` POSTed by a scheduler): sets `spec.nodeName` and the
//!   `PodScheduled` condition; 409 for a Pod already bound or being deleted.
//!
//! [`TestApiServer::set_pod_log`]: crate::TestApiServer::set_pod_log

use serde_json::{Value, json};

use super::StatusReason;
use super::status::ApiError;
use super::time::now_rfc3339;

/// The containers of a Pod, init containers first, as `podutil.VisitContainers` visits
/// them.
fn container_names(pod: &Value) -> Vec<&str> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|list| {
            pod.pointer(&format!("/spec/{list}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect()
}

/// The container a log or stream request is for (`validateContainer`): the one named, which
/// must be the Pod's, or the only container of the Pod.
pub(crate) fn container(pod: &Value, requested: Option<&str>) -> Result<String, ApiError> {
    let name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let all = container_names(pod);
    match requested.filter(|c| !c.is_empty()) {
        Some(c) if all.contains(&c) => Ok(c.to_string()),
        Some(c) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None => {
            let main: Vec<&str> = pod
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("name").and_then(Value::as_str))
                .collect();
            match main.as_slice() {
                [only] => Ok((*only).to_string()),
                [] => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}"
                ))),
                _ => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    all.join(" ")
                ))),
            }
        }
    }
}

/// What a log request returns of `text`: its last `tail_lines` lines, then at most
/// `limit_bytes` bytes (as the kubelet applies them).
pub(crate) fn log_text(text: &str, tail_lines: Option<usize>, limit_bytes: Option<usize>) -> &str {
    let mut from = 0;
    if let Some(n) = tail_lines {
        let body = text.strip_suffix('\n').unwrap_or(text);
        from = if n == 0 {
            text.len()
        } else {
            body.match_indices('\n')
                .rev()
                .nth(n - 1)
                .map_or(0, |(i, _)| i + 1)
        };
    }
    let tail = &text[from..];
    match limit_bytes {
        Some(limit) if limit < tail.len() => {
            let mut end = limit;
            while !tail.is_char_boundary(end) {
                end -= 1;
            }
            &tail[..end]
        }
        _ => tail,
    }
}

/// The error of `exec`, `attach` or `portforward` on `pod` (after its container is checked):
/// there is no kubelet to stream from.
pub(crate) fn stream_error(pod: &Value) -> ApiError {
    let name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let node = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() {
        ApiError::bad_request(format!("pod {name} does not have a host assigned"))
    } else {
        ApiError::new(
            StatusReason::InternalError,
            format!(
                "error dialing backend: no kubelet serves node {node:?} (the test API server runs none)"
            ),
        )
    }
}

/// The Pod a `Binding` to a node makes of `pod` (`assignPod`): its node set and the
/// `PodScheduled` condition true; 409 if it is bound already or being deleted.
pub(crate) fn bind(pod: &Value, binding: &Value) -> Result<Value, ApiError> {
    let name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let conflict = |why: String| {
        ApiError::new(
            StatusReason::Conflict,
            format!("Operation cannot be fulfilled on pods/binding \"{name}\": {why}"),
        )
        .with_details(json!({"name": name, "kind": "pods/binding"}))
    };
    let target = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if target.is_empty() {
        return Err(ApiError::invalid_fields(
            "Binding",
            name,
            vec![super::FieldError::required("target.name", "")],
        ));
    }
    if pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        return Err(conflict(format!(
            "pod {name} is being deleted, cannot be assigned to a host"
        )));
    }
    if let Some(node) = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        return Err(conflict(format!(
            "pod {name} is already assigned to node \"{node}\""
        )));
    }
    let mut bound = pod.clone();
    bound["spec"]["nodeName"] = json!(target);
    let condition = json!({
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": null,
        "lastTransitionTime": now_rfc3339(),
    });
    let conditions = bound["status"]
        .as_object_mut()
        .map(|status| status.entry("conditions").or_insert_with(|| json!([])));
    if let Some(Value::Array(conditions)) = conditions {
        conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some("PodScheduled"));
        conditions.push(condition);
    }
    Ok(bound)
}

#[cfg(test)]
mod tests;
