//! events.k8s.io/v1 Events: the same objects as core v1 Events, converted field by field,
//! as kube-apiserver serves them; kube's `Recorder` (which writes events.k8s.io/v1), reads
//! and writes through both APIs, watches across them, discovery, the v1 validation, and
//! `kubectl get events`.

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{Event as CoreEvent, ObjectReference, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::Resource as _;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::discovery::Discovery;
use kube::runtime::events::{Event as Note, EventType, Recorder, Reporter};
use serde_json::{Value, json};

use super::common::{pod, raw, server, within};

#[tokio::test]
async fn kubes_recorder_publishes_and_patches_a_series_seen_through_both_apis() {
    let server = server().await;
    let client = server.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let web = pods
        .create(&PostParams::default(), &pod("web", &[]))
        .await
        .unwrap();
    let reference = web.object_ref(&());
    let reporter = Reporter {
        controller: "example.com/web-operator".into(),
        instance: Some("web-operator-0".into()),
    };
    let recorder = Recorder::new(client.clone(), reporter);
    let note = Note {
        type_: EventType::Warning,
        reason: "Degraded".into(),
        note: Some("the pod is not ready".into()),
        action: "Reconcile".into(),
        secondary: None,
    };
    within(recorder.publish(&note, &reference)).await.unwrap();

    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let listed = events.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(listed.len(), 1);
    let first = &listed[0];
    assert_eq!(first.note.as_deref(), Some("the pod is not ready"));
    assert_eq!(
        first.reporting_controller.as_deref(),
        Some("example.com/web-operator")
    );
    assert!(first.series.is_none());
    assert!(first.event_time.is_some());

    // The second publish of the same event is a merge patch with a series.
    within(recorder.publish(&note, &reference)).await.unwrap();
    let name = first.metadata.name.clone().unwrap();
    let patched = events.get(&name).await.unwrap();
    assert_eq!(patched.series.as_ref().map(|s| s.count), Some(2));
    assert_ne!(
        patched.metadata.resource_version,
        first.metadata.resource_version
    );
    within(recorder.publish(&note, &reference)).await.unwrap();
    let third = events.get(&name).await.unwrap();
    assert_eq!(third.series.as_ref().map(|s| s.count), Some(3));

    // The same object through core v1: same name and version, fields converted.
    let core: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
    let all = core.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(all.len(), 1);
    let old = &all[0];
    assert_eq!(old.metadata.name.as_deref(), Some(name.as_str()));
    assert_eq!(
        old.metadata.resource_version,
        third.metadata.resource_version
    );
    assert_eq!(old.message.as_deref(), Some("the pod is not ready"));
    assert_eq!(
        old.reporting_component.as_deref(),
        Some("example.com/web-operator")
    );
    assert_eq!(old.reporting_instance.as_deref(), Some("web-operator-0"));
    assert_eq!(old.involved_object.name.as_deref(), Some("web"));
    assert_eq!(old.involved_object.uid, web.metadata.uid);
    assert_eq!(old.type_.as_deref(), Some("Warning"));
    assert_eq!(old.action.as_deref(), Some("Reconcile"));
    assert_eq!(old.series.as_ref().and_then(|s| s.count), Some(3));
    assert!(old.first_timestamp.is_none() && old.count.is_none());

    // The field selectors of each API find it.
    let by_pod = ListParams::default()
        .fields("regarding.name=web,reportingController=example.com/web-operator");
    assert_eq!(events.list(&by_pod).await.unwrap().items.len(), 1);
    let by_pod = ListParams::default().fields("involvedObject.name=web,type=Warning");
    assert_eq!(core.list(&by_pod).await.unwrap().items.len(), 1);
    let elsewhere = ListParams::default().fields("regarding.name=db");
    assert!(events.list(&elsewhere).await.unwrap().items.is_empty());
    let error = events
        .list(&ListParams::default().fields("involvedObject.name=web"))
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("field label not supported: involvedObject.name"),
        "{error}"
    );
}

#[tokio::test]
async fn a_core_event_is_read_patched_and_deleted_through_events_k8s_io() {
    let server = server().await;
    let client = server.client();
    let core: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
    let created = core
        .create(
            &PostParams::default(),
            &CoreEvent {
                metadata: kube::core::ObjectMeta {
                    name: Some("web.1".into()),
                    ..Default::default()
                },
                involved_object: ObjectReference {
                    kind: Some("Pod".into()),
                    name: Some("web".into()),
                    namespace: Some("default".into()),
                    ..Default::default()
                },
                reason: Some("Pulled".into()),
                message: Some("pulled the image".into()),
                source: Some(k8s_openapi::api::core::v1::EventSource {
                    component: Some("kubelet".into()),
                    host: None,
                }),
                count: Some(4),
                type_: Some("Normal".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();

    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let read = events.get("web.1").await.unwrap();
    assert_eq!(
        read.metadata.resource_version,
        created.metadata.resource_version
    );
    assert_eq!(read.metadata.uid, created.metadata.uid);
    assert_eq!(read.note.as_deref(), Some("pulled the image"));
    assert_eq!(read.deprecated_count, Some(4));
    assert_eq!(
        read.deprecated_source
            .as_ref()
            .and_then(|s| s.component.as_deref()),
        Some("kubelet")
    );
    assert_eq!(
        read.regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("web")
    );
    assert!(read.event_time.is_none());

    // As JSON: Go's events.k8s.io/v1 shape, whatever was stored.
    let json = raw(
        &server,
        "GET",
        "/apis/events.k8s.io/v1/namespaces/default/events/web.1",
        &[],
        b"",
    )
    .await;
    assert_eq!(json.status, 200);
    let body: Value = serde_json::from_slice(&json.body).unwrap();
    assert_eq!(body["apiVersion"], "events.k8s.io/v1");
    assert_eq!(body["eventTime"], Value::Null);
    assert!(body.get("eventTime").is_some());
    assert!(body.get("message").is_none() && body.get("involvedObject").is_none());

    // A patch in the events.k8s.io shape: the series may change (a legacy event, so the
    // other fields are checked only as every Event is).
    let patch = json!({
        "series": {"count": 2, "lastObservedTime": "2024-01-02T03:04:05.000000Z"},
        "metadata": {"labels": {"seen": "twice"}},
    });
    let patched = events
        .patch("web.1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(patched.series.as_ref().map(|s| s.count), Some(2));
    let again = core.get("web.1").await.unwrap();
    assert_eq!(
        again.metadata.resource_version,
        patched.metadata.resource_version
    );
    assert_eq!(again.series.as_ref().and_then(|s| s.count), Some(2));
    assert_eq!(again.message.as_deref(), Some("pulled the image"));
    assert_eq!(again.count, Some(4));

    // A patch that changes nothing changes nothing.
    let same = events
        .patch(
            "web.1",
            &PatchParams::default(),
            &Patch::Merge(&json!({"note": "pulled the image"})),
        )
        .await
        .unwrap();
    assert_eq!(
        same.metadata.resource_version,
        patched.metadata.resource_version
    );

    // The note of an existing event is immutable through events.k8s.io/v1.
    let error = events
        .patch(
            "web.1",
            &PatchParams::default(),
            &Patch::Merge(&json!({"note": "other"})),
        )
        .await
        .unwrap_err();
    match error {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 422);
            assert!(
                status
                    .message
                    .contains("message: Invalid value: \"other\": field is immutable"),
                "{}",
                status.message
            );
        }
        other => panic!("unexpected {other}"),
    }
    // A JSON patch works on the events.k8s.io shape too.
    let json_patch = json!([{"op": "replace", "path": "/series/count", "value": 3}]);
    let response = raw(
        &server,
        "PATCH",
        "/apis/events.k8s.io/v1/namespaces/default/events/web.1",
        &[("Content-Type", "application/json-patch+json")],
        json_patch.to_string().as_bytes(),
    )
    .await;
    assert_eq!(response.status, 200);
    let patched: Event = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(patched.series.map(|s| s.count), Some(3));

    events.delete("web.1", &Default::default()).await.unwrap();
    assert!(core.get_opt("web.1").await.unwrap().is_none());

    // The server's direct methods convert as requests do.
    let mut direct = recorded_event("web.4");
    direct["metadata"]["namespace"] = json!("default");
    let created = server.create_json(direct).unwrap();
    assert_eq!(created["apiVersion"], "events.k8s.io/v1");
    assert_eq!(created["note"], "all good");
    let stored = server
        .get_json("v1", "Event", Some("default"), "web.4")
        .unwrap();
    assert_eq!(stored["message"], "all good");
    assert_eq!(stored["involvedObject"]["name"], "web");
    let listed = server.list_json("events.k8s.io/v1", "Event", None).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["regarding"]["name"], "web");
    let mut bare = recorded_event("web.5");
    bare.as_object_mut().unwrap().remove("eventTime");
    assert!(server.create_json(bare).is_err());
}

fn recorded_event(name: &str) -> Value {
    json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name},
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

#[tokio::test]
async fn a_watch_on_one_api_sees_writes_through_the_other() {
    let server = server().await;
    let client = server.client();
    let core: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let rv = core
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut core_watch = core
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    let mut events_watch = events
        .watch(&WatchParams::default().fields("regarding.name=web"), &rv)
        .await
        .unwrap()
        .boxed();

    let event: Event = serde_json::from_value(recorded_event("web.2")).unwrap();
    let created = events.create(&PostParams::default(), &event).await.unwrap();
    match within(core_watch.try_next()).await.unwrap().unwrap() {
        WatchEvent::Added(seen) => {
            assert_eq!(
                seen.metadata.resource_version,
                created.metadata.resource_version
            );
            assert_eq!(seen.message.as_deref(), Some("all good"));
            assert_eq!(
                seen.reporting_component.as_deref(),
                Some("example.com/operator")
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    match within(events_watch.try_next()).await.unwrap().unwrap() {
        WatchEvent::Added(seen) => assert_eq!(seen.note.as_deref(), Some("all good")),
        other => panic!("unexpected {other:?}"),
    }

    // A write through core v1, seen through events.k8s.io.
    let patch = json!({"series": {"count": 2, "lastObservedTime": "2024-01-02T03:05:00.000000Z"}});
    core.patch("web.2", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    match within(events_watch.try_next()).await.unwrap().unwrap() {
        WatchEvent::Modified(seen) => {
            assert_eq!(seen.series.map(|s| s.count), Some(2));
            assert_eq!(seen.regarding.and_then(|r| r.name).as_deref(), Some("web"));
        }
        other => panic!("unexpected {other:?}"),
    }
    // Server-side apply through events.k8s.io: the configuration in its shape (forced: the
    // series is the merge patch's manager's).
    let apply = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "web.2", "labels": {"applied": "yes"}},
        "series": {"count": 3, "lastObservedTime": "2024-01-02T03:06:00.000000Z"},
    });
    let applied = events
        .patch(
            "web.2",
            &PatchParams::apply("tester").force(),
            &Patch::Apply(&apply),
        )
        .await
        .unwrap();
    assert_eq!(applied.series.map(|s| s.count), Some(3));
    assert_eq!(applied.note.as_deref(), Some("all good"));
    let invalid = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "web.2"}, "note": "rewritten",
    });
    let error = events
        .patch(
            "web.2",
            &PatchParams::apply("tester").force(),
            &Patch::Apply(&invalid),
        )
        .await
        .unwrap_err();
    assert!(error.to_string().contains("field is immutable"), "{error}");
    match within(events_watch.try_next()).await.unwrap().unwrap() {
        WatchEvent::Modified(seen) => assert_eq!(seen.series.map(|s| s.count), Some(3)),
        other => panic!("unexpected {other:?}"),
    }
    core.delete("web.2", &Default::default()).await.unwrap();
    loop {
        match within(events_watch.try_next()).await.unwrap().unwrap() {
            WatchEvent::Deleted(seen) => {
                assert_eq!(seen.metadata.name.as_deref(), Some("web.2"));
                break;
            }
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn discovery_serves_events_k8s_io_v1() {
    let server = server().await;
    let discovery = within(Discovery::new(server.client()).run()).await.unwrap();
    let group = discovery
        .get("events.k8s.io")
        .expect("events.k8s.io is served");
    assert_eq!(group.preferred_version_or_latest(), "v1");
    let (resource, caps) = group
        .recommended_resources()
        .into_iter()
        .find(|(r, _)| r.plural == "events")
        .expect("events");
    assert_eq!(resource.kind, "Event");
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    for verb in [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ] {
        assert!(caps.operations.iter().any(|o| o == verb), "{verb}");
    }

    let response = raw(&server, "GET", "/apis/events.k8s.io/v1", &[], b"").await;
    let list: Value = serde_json::from_slice(&response.body).unwrap();
    let events = &list["resources"][0];
    assert_eq!(events["name"], "events");
    assert_eq!(events["shortNames"], json!(["ev"]));
    // Stored as core v1 Events: the same storage version hash.
    let core = raw(&server, "GET", "/api/v1", &[], b"").await;
    let core: Value = serde_json::from_slice(&core.body).unwrap();
    let core_events = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "events")
        .unwrap();
    assert_eq!(
        events["storageVersionHash"],
        core_events["storageVersionHash"]
    );
}

#[tokio::test]
async fn an_events_k8s_io_event_without_the_v1_fields_is_invalid() {
    let server = server().await;
    let events: Api<Event> = Api::namespaced(server.client(), "default");
    let bare = json!({
        "metadata": {"name": "bare"},
        "regarding": {"kind": "Pod", "namespace": "default", "name": "web"},
        "note": "no time, no reporter",
    });
    let invalid = async |event: &Value| {
        let event: Event = serde_json::from_value(event.clone()).unwrap();
        let error = events
            .create(&PostParams::default(), &event)
            .await
            .unwrap_err();
        let kube::Error::Api(status) = error else {
            panic!("unexpected {error}");
        };
        assert_eq!(status.code, 422);
        assert_eq!(status.reason, "Invalid");
        status.message
    };
    // Without `eventTime`, the legacy rules look at the namespaces only.
    assert_eq!(
        invalid(&bare).await,
        "Event \"bare\" is invalid: [eventTime: Required value, type: Invalid value: \"\": has invalid value: ]"
    );
    let mut timed = bare.clone();
    timed["eventTime"] = json!("2024-01-02T03:04:05.123456Z");
    timed["type"] = json!("Normal");
    let message = invalid(&timed).await;
    for expected in [
        "reportingController: Required value",
        "reportingController: Invalid value: \"\": name part must be non-empty",
        "reportingInstance: Required value",
        "action: Required value",
        "reason: Required value",
    ] {
        assert!(message.contains(expected), "{expected} in {message}");
    }
    assert!(!message.contains("eventTime"), "{message}");

    // Deprecated fields must be unset on create through events.k8s.io/v1.
    let mut event = recorded_event("old-style");
    event["deprecatedCount"] = json!(2);
    event["deprecatedSource"] = json!({"component": "kubelet"});
    let event: Event = serde_json::from_value(event).unwrap();
    let error = events
        .create(&PostParams::default(), &event)
        .await
        .unwrap_err();
    let kube::Error::Api(status) = error else {
        panic!("unexpected {error}");
    };
    assert_eq!(status.code, 422);
    assert!(
        status
            .message
            .contains("count: Invalid value: \"\": needs to be unset"),
        "{}",
        status.message
    );
    assert!(
        status
            .message
            .contains("source: Invalid value: \"\": needs to be unset"),
        "{}",
        status.message
    );

    // The same event through core v1 is fine (legacy validation only).
    let core: Api<CoreEvent> = Api::namespaced(server.client(), "default");
    let legacy: CoreEvent = serde_json::from_value(json!({
        "metadata": {"name": "bare"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"},
        "message": "no time, no reporter",
    }))
    .unwrap();
    core.create(&PostParams::default(), &legacy).await.unwrap();
}

/// A core v1 Event passes `legacyValidateEvent` on create and update: without `eventTime`
/// its `involvedObject.namespace` is its own (or empty in `default`); with one, a reporter
/// (named `source` in v1), an instance, an action and a reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_core_event_passes_the_legacy_validation() {
    let server = server().await;
    super::common::namespace(&server, "team");
    let core: Api<CoreEvent> = Api::namespaced(server.client(), "team");
    let invalid = async |event: Value| {
        let event: CoreEvent = serde_json::from_value(event).unwrap();
        let error = core
            .create(&PostParams::default(), &event)
            .await
            .unwrap_err();
        let kube::Error::Api(status) = error else {
            panic!("unexpected {error}");
        };
        assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
        status.message
    };
    // The involved object's namespace left out, in a namespace other than `default`.
    let unqualified = json!({
        "metadata": {"name": "unqualified"},
        "involvedObject": {"kind": "Pod", "name": "web"},
        "reason": "Started",
        "message": "started",
    });
    assert_eq!(
        invalid(unqualified.clone()).await,
        "Event \"unqualified\" is invalid: involvedObject.namespace: Invalid value: \"\": does not match event.namespace"
    );
    let mut elsewhere = unqualified.clone();
    elsewhere["metadata"]["name"] = json!("elsewhere");
    elsewhere["involvedObject"]["namespace"] = json!("default");
    assert_eq!(
        invalid(elsewhere).await,
        "Event \"elsewhere\" is invalid: involvedObject.namespace: Invalid value: \"default\": does not match event.namespace"
    );
    // With an event time, the reporter's fields are required.
    let mut timed = unqualified.clone();
    timed["metadata"]["name"] = json!("timed");
    timed["involvedObject"]["namespace"] = json!("team");
    timed["eventTime"] = json!("2024-01-02T03:04:05.123456Z");
    let message = invalid(timed).await;
    for expected in [
        "source: Required value",
        "reportingInstance: Required value",
        "action: Required value",
    ] {
        assert!(message.contains(expected), "{expected} in {message}");
    }

    // In `default`, an empty namespace is accepted (old clients); a matching one anywhere.
    let defaults: Api<CoreEvent> = Api::namespaced(server.client(), "default");
    let event: CoreEvent = serde_json::from_value(unqualified.clone()).unwrap();
    defaults
        .create(&PostParams::default(), &event)
        .await
        .unwrap();
    let mut matching = unqualified;
    matching["involvedObject"]["namespace"] = json!("team");
    let event: CoreEvent = serde_json::from_value(matching).unwrap();
    core.create(&PostParams::default(), &event).await.unwrap();
    // An update is checked too.
    let moved = json!({"involvedObject": {"namespace": "default"}});
    let error = core
        .patch(
            "unqualified",
            &PatchParams::default(),
            &Patch::Merge(&moved),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = error else {
        panic!("unexpected {error}");
    };
    assert_eq!(status.code, 422);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_gets_events_through_both_apis() {
    let Some((server, kubectl)) = super::kubectl::started().await else {
        return;
    };
    let events: Api<Event> = Api::namespaced(server.client(), "default");
    let event: Event = serde_json::from_value(recorded_event("web.3")).unwrap();
    events.create(&PostParams::default(), &event).await.unwrap();

    let core = kubectl.ok(&["get", "events"]).await;
    let header = core.lines().next().unwrap();
    assert!(header.starts_with("LAST SEEN"), "{core}");
    for column in ["TYPE", "REASON", "OBJECT", "MESSAGE"] {
        assert!(header.contains(column), "{core}");
    }
    let row = core.lines().nth(1).unwrap();
    for cell in ["Normal", "Synced", "pod/web", "all good"] {
        assert!(row.contains(cell), "{core}");
    }
    let view = kubectl.ok(&["get", "events.v1.events.k8s.io"]).await;
    assert_eq!(view.lines().next().unwrap(), header, "{view}");
    // The same row but for LAST SEEN, an age that may tick between the two calls.
    let after_age = |row: &str| row.split_whitespace().skip(1).collect::<Vec<_>>().join(" ");
    assert_eq!(
        after_age(view.lines().nth(1).unwrap()),
        after_age(row),
        "{view}"
    );

    let yaml = kubectl
        .ok(&["get", "events.v1.events.k8s.io", "web.3", "-o", "yaml"])
        .await;
    assert!(yaml.contains("apiVersion: events.k8s.io/v1"), "{yaml}");
    assert!(yaml.contains("note: all good"), "{yaml}");
    let yaml = kubectl.ok(&["get", "events", "web.3", "-o", "yaml"]).await;
    assert!(yaml.contains("apiVersion: v1"), "{yaml}");
    assert!(yaml.contains("message: all good"), "{yaml}");
    let wide = kubectl
        .ok(&[
            "get",
            "events.events.k8s.io",
            "--field-selector",
            "regarding.name=web",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(wide.trim(), "event.events.k8s.io/web.3");
    kubectl.cleanup();
}

#[tokio::test]
async fn errors_through_events_k8s_io_name_its_resource() {
    let server = server().await;
    let events: Api<Event> = Api::namespaced(server.client(), "default");
    let err = match within(events.get("nope")).await {
        Err(kube::Error::Api(status)) => status,
        other => panic!("expected a 404, got {other:?}"),
    };
    assert_eq!(err.code, 404);
    assert_eq!(err.message, "events.events.k8s.io \"nope\" not found");
    assert_eq!(err.details.unwrap().group, "events.k8s.io");
    // Through core v1, the core resource.
    let core: Api<CoreEvent> = Api::namespaced(server.client(), "default");
    let err = match within(core.get("nope")).await {
        Err(kube::Error::Api(status)) => status,
        other => panic!("expected a 404, got {other:?}"),
    };
    assert_eq!(err.message, "events \"nope\" not found");
}
