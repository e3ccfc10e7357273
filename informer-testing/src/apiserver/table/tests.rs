use super::*;
use crate::apiserver::resource::Registry;
use crate::apiserver::time::format_time;

#[test]
fn printer_columns_replace_age_and_type_their_cells() {
    let mut registry = Registry::builtin();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "First", "type": "string", "jsonPath": ".spec.items[0].name",
                        "description": "the first item"}],
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    registry.install(
        "widgets.example.com",
        crate::apiserver::crd::served_types(&crd, 0).unwrap(),
    );
    let widgets = registry.by_path("example.com", "v1", "widgets").unwrap();
    let widget = json!({"metadata": {"name": "w"},
        "spec": {"size": 2.0, "items": [{"name": "a"}]}});
    let table = table(&widgets, &[widget], None, None);
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Name", "Size", "First"]);
    assert_eq!(
        table["columnDefinitions"][1]["description"],
        "Custom resource definition column (in JSONPath format): .spec.size"
    );
    assert_eq!(
        table["columnDefinitions"][2]["description"],
        "the first item"
    );
    assert_eq!(table["rows"][0]["cells"], json!(["w", 2, "a"]));
    assert_eq!(printer_cell("integer", Some(&json!("x"))), Value::Null);
    assert_eq!(printer_cell("boolean", None), Value::Null);
    assert_eq!(
        printer_cell("date", Some(&json!("bad"))),
        json!("<invalid>")
    );
}

#[test]
fn durations() {
    assert_eq!(human_duration(5), "5s");
    assert_eq!(human_duration(130), "2m10s");
    assert_eq!(human_duration(3600), "60m");
    assert_eq!(human_duration(4 * 3600 + 60), "4h1m");
    assert_eq!(human_duration(3 * 86_400), "3d0h");
}

#[test]
fn pod_rows() {
    let pods = Registry::builtin().by_path("", "v1", "pods").unwrap();
    let pod = json!({
        "metadata": {"name": "web", "creationTimestamp": format_time(jiff::Timestamp::UNIX_EPOCH)},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"phase": "Running", "containerStatuses": [{"ready": true, "restartCount": 2}]}
    });
    let table = table(&pods, &[pod], Some(5), None);
    assert_eq!(table["rows"][0]["cells"][0], "web");
    assert_eq!(table["rows"][0]["cells"][1], "1/2");
    assert_eq!(table["rows"][0]["cells"][2], "Running");
    assert_eq!(table["rows"][0]["cells"][3], 2);
    assert_eq!(table["metadata"]["resourceVersion"], "5");
    let event = event_as_table(
        &pods,
        Bytes::from_static(b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\"}}}\n"),
    );
    let event: Value = serde_json::from_slice(&event).unwrap();
    assert_eq!(event["object"]["kind"], "Table");
    assert_eq!(event["object"]["rows"][0]["cells"][0], "x");
}
