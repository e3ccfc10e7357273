use super::*;
use crate::apiserver::resource::Registry;

fn recorded() -> Value {
    json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "web.17", "namespace": "default"},
        "eventTime": "2024-01-02T03:04:05.123456Z",
        "reportingController": "example.com/operator",
        "reportingInstance": "operator-0",
        "action": "Reconcile",
        "reason": "Synced",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "web"},
        "note": "all good",
        "type": "Normal",
    })
}

#[test]
fn conversion_renames_fields_both_ways_and_writes_what_go_writes() {
    let core = to_core(&recorded());
    assert_eq!(
        core,
        json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "web.17", "namespace": "default"},
            "eventTime": "2024-01-02T03:04:05.123456Z",
            "reportingComponent": "example.com/operator",
            "reportingInstance": "operator-0",
            "action": "Reconcile",
            "reason": "Synced",
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"},
            "message": "all good",
            "type": "Normal",
            "source": {},
            "firstTimestamp": null,
            "lastTimestamp": null,
        })
    );
    let mut back = recorded();
    back["deprecatedSource"] = json!({});
    back["deprecatedFirstTimestamp"] = Value::Null;
    back["deprecatedLastTimestamp"] = Value::Null;
    assert_eq!(from_core(&core), back);
}

#[test]
fn a_legacy_core_event_reads_with_the_deprecated_fields() {
    let core = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "a", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "web"},
        "message": "pulled", "reason": "Pulled", "count": 3,
        "source": {"component": "kubelet"},
        "firstTimestamp": "2024-01-01T00:00:00Z",
        "lastTimestamp": "2024-01-01T00:01:00Z",
        "reportingComponent": "", "reportingInstance": "",
    });
    let events = from_core(&core);
    assert_eq!(events["apiVersion"], "events.k8s.io/v1");
    assert_eq!(events["eventTime"], Value::Null);
    assert_eq!(events["deprecatedCount"], 3);
    assert_eq!(events["deprecatedSource"]["component"], "kubelet");
    assert_eq!(events["note"], "pulled");
    assert!(events.get("reportingController").is_none());
    assert!(events.get("message").is_none());
}

#[test]
fn v1_creates_require_the_new_fields() {
    let mut event = json!({"metadata": {"name": "x", "namespace": "team-a"}, "reason": "R"});
    core_shape(&mut event);
    let errors: Vec<String> = create_errors(&event)
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.contains(&"eventTime: Required value".to_string()),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("type: Invalid value: \"\": has invalid value")),
        "{errors:?}"
    );

    let mut event = to_core(&recorded());
    event["reportingComponent"] = json!("");
    event["action"] = json!("");
    let errors: Vec<String> = create_errors(&event)
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(
        errors[..3],
        [
            "reportingController: Required value".to_string(),
            "reportingController: Invalid value: \"\": name part must be non-empty".to_string(),
            format!(
                "reportingController: Invalid value: \"\": {}",
                validation::QUALIFIED_NAME
            ),
        ]
    );
    assert!(errors.contains(&"action: Required value".to_string()));
    assert!(create_errors(&to_core(&recorded())).is_empty());
}

#[test]
fn v1_updates_may_change_only_the_series() {
    let old = to_core(&recorded());
    let mut new = old.clone();
    new["series"] = json!({"count": 2, "lastObservedTime": "2024-01-02T03:05:00.000000Z"});
    assert!(update_errors(&old, &new).is_empty());
    new["message"] = json!("changed");
    let errors: Vec<String> = update_errors(&old, &new)
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(
        errors,
        ["message: Invalid value: \"changed\": field is immutable"]
    );
    let mut bad = old.clone();
    bad["series"] = json!({"count": 1});
    assert_eq!(update_errors(&old, &bad).len(), 2);
}

#[test]
fn an_unchanged_field_keeps_its_stored_form() {
    let old = json!({"involvedObject": {"kind": "Pod"}, "message": "m"});
    let mut new = json!({"involvedObject": {"kind": "Pod", "name": ""}, "message": "m",
        "source": {}, "firstTimestamp": null});
    keep_unchanged(&old, &mut new);
    assert_eq!(new, old);
}

#[test]
fn the_view_shares_the_core_storage_and_converts_field_labels() {
    let registry = Registry::builtin();
    let core = registry.by_path("", "v1", "events").unwrap();
    let view = registry.by_path(GROUP, "v1", "events").unwrap();
    assert!(is_view(&view) && !is_view(&core));
    assert_eq!(view.key(), core.key());
    assert_eq!(view.storage(&registry).group, "");
    assert_eq!(view.short_names, ["ev"]);
    let stored = to_core(&recorded());
    assert_eq!(view.field_value(&stored, "regarding.name"), "web");
    assert_eq!(
        view.field_value(&stored, "reportingController"),
        "example.com/operator"
    );
    // `source` falls back to the reporting controller, for both APIs.
    assert_eq!(view.field_value(&stored, "source"), "example.com/operator");
    assert_eq!(core.field_value(&stored, "source"), "example.com/operator");
    assert!(view.supports_field("regarding.kind") && !view.supports_field("involvedObject.kind"));
}
