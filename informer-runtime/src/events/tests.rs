//! The recorder's rules through a real `kube::Client` over a scripted HTTP service (what was
//! sent, what the server answers), time moved by a clock of the test's own.

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures::future::BoxFuture;
use http_body_util::{BodyExt, Full};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ObjectReference};
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::*;

/// One request the client sent.
#[derive(Debug, Clone)]
struct Sent {
    method: String,
    path: String,
    content_type: String,
    body: Value,
}

/// An HTTP service that records every request and answers it with the next scripted answer
/// (status and body, or `None`: the server cannot be reached), or, with none left, as a
/// server that accepts everything: the created object back, an Event for a patch.
#[derive(Clone, Default)]
struct Fake {
    sent: Arc<Mutex<Vec<Sent>>>,
    answers: Arc<Mutex<VecDeque<Scripted>>>,
}

/// A scripted answer: a status and body, or `None` for a server that cannot be reached.
type Scripted = Option<(u16, Value)>;

/// The transport's failure of a scripted unreachable server.
#[derive(Debug, thiserror::Error)]
#[error("connection refused (scripted)")]
struct Refused;

impl Fake {
    fn answer_next(&self, code: u16, reason: &str) {
        let status = json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": format!("scripted {reason}"), "reason": reason, "code": code,
        });
        self.answers.lock().push_back(Some((code, status)));
    }

    /// The next `times` requests fail in the transport.
    fn unreachable_next(&self, times: usize) {
        self.answers.lock().extend(std::iter::repeat_n(None, times));
    }

    fn sent(&self) -> Vec<Sent> {
        self.sent.lock().clone()
    }

    fn methods(&self) -> Vec<String> {
        self.sent().into_iter().map(|s| s.method).collect()
    }
}

impl tower_service::Service<http::Request<kube::client::Body>> for Fake {
    type Response = http::Response<Full<Bytes>>;
    type Error = Refused;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _cx: &mut std::task::Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let fake = self.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let bytes = body.collect().await.expect("a request body").to_bytes();
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let sent = Sent {
                method: parts.method.to_string(),
                path: parts.uri.path().to_owned(),
                content_type: parts
                    .headers
                    .get(http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned(),
                body,
            };
            fake.sent.lock().push(sent.clone());
            let scripted = fake.answers.lock().pop_front();
            let (code, answer) = match scripted {
                Some(Some(answer)) => answer,
                Some(None) => return Err(Refused),
                None => accepted(&sent),
            };
            Ok(http::Response::builder()
                .status(code)
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(Full::new(Bytes::from(answer.to_string())))
                .expect("a response"))
        })
    }
}

/// What a server that accepts everything answers: the created object back, an Event for a
/// patch.
fn accepted(sent: &Sent) -> (u16, Value) {
    if sent.method == "POST" {
        return (201, sent.body.clone());
    }
    let name = sent.path.rsplit('/').next().unwrap_or_default();
    let event = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": name}, "eventTime": null,
    });
    (200, event)
}

/// A clock the test moves.
struct TestClock(Mutex<SystemTime>);

impl TestClock {
    fn at(nanos: u64) -> Arc<Self> {
        Arc::new(Self(Mutex::new(UNIX_EPOCH + Duration::from_nanos(nanos))))
    }

    fn advance(&self, by: Duration) {
        *self.0.lock() += by;
    }
}

impl Clock for TestClock {
    fn now(&self) -> SystemTime {
        *self.0.lock()
    }
}

/// 2025-01-02T03:04:05.123456789Z.
const START: u64 = 1_735_787_045_123_456_789;

fn reporter() -> Reporter {
    Reporter {
        controller: "widget-controller".into(),
        instance: "widget-controller-0".into(),
    }
}

/// A recorder over `fake` as [`reporter`], at `clock`, remembering at most `capacity` series.
fn recorder_with(fake: &Fake, clock: Arc<TestClock>, capacity: usize) -> EventRecorder {
    let client = Client::new(fake.clone(), "default");
    EventRecorder::with_parts(Some(client), reporter(), clock, capacity)
}

fn recorder(fake: &Fake, clock: Arc<TestClock>) -> EventRecorder {
    recorder_with(fake, clock, CACHE_CAPACITY)
}

/// A reference to ConfigMap `shop/name`.
fn config_map(name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        namespace: Some("shop".into()),
        name: Some(name.into()),
        uid: Some(format!("uid-{name}")),
        resource_version: Some("7".into()),
        field_path: None,
    }
}

fn event(reason: &str, note: &str) -> Event {
    Event {
        type_: EventType::Warning,
        reason: reason.into(),
        action: "Validate".into(),
        note: Some(note.into()),
        related: None,
    }
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string at {pointer} in {value}"))
}

#[tokio::test]
async fn the_first_occurrence_creates_an_event_named_and_filled_as_client_go() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    let mut related = config_map("other");
    related.field_path = Some("data.port".into());
    let mut first = event("InvalidConfig", "port is not a number");
    first.related = Some(related.clone());

    recorder.publish(&config_map("web"), &first).await.unwrap();

    let sent = fake.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].method, "POST");
    assert_eq!(
        sent[0].path,
        "/apis/events.k8s.io/v1/namespaces/shop/events"
    );
    let body = &sent[0].body;
    assert_eq!(str_at(body, "/metadata/name"), format!("web.{START:x}"));
    assert_eq!(str_at(body, "/metadata/namespace"), "shop");
    // MicroTime: RFC 3339 with microseconds, cut (not rounded).
    assert_eq!(str_at(body, "/eventTime"), "2025-01-02T03:04:05.123456Z");
    assert_eq!(str_at(body, "/reportingController"), "widget-controller");
    assert_eq!(str_at(body, "/reportingInstance"), "widget-controller-0");
    assert_eq!(str_at(body, "/type"), "Warning");
    assert_eq!(str_at(body, "/reason"), "InvalidConfig");
    assert_eq!(str_at(body, "/action"), "Validate");
    assert_eq!(str_at(body, "/note"), "port is not a number");
    assert_eq!(
        body["regarding"],
        serde_json::to_value(config_map("web")).unwrap()
    );
    assert_eq!(body["related"], serde_json::to_value(related).unwrap());
    assert!(body.get("series").is_none(), "{body}");
    assert!(body.get("deprecatedSource").is_none(), "{body}");
    assert_eq!(recorder.remembered(), 1);
}

#[tokio::test]
async fn an_event_about_a_cluster_scoped_object_goes_to_default() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some("shop".into());
    namespace.metadata.uid = Some("uid-shop".into());
    namespace.metadata.resource_version = Some("3".into());

    recorder
        .publish_for(&namespace, &event("Terminating", ""))
        .await
        .unwrap();

    let sent = &fake.sent()[0];
    assert_eq!(
        sent.path,
        "/apis/events.k8s.io/v1/namespaces/default/events"
    );
    assert_eq!(str_at(&sent.body, "/metadata/namespace"), "default");
    assert!(sent.body.get("note").is_none(), "an empty note is left out");
    let regarding = &sent.body["regarding"];
    assert_eq!(str_at(regarding, "/kind"), "Namespace");
    assert_eq!(str_at(regarding, "/apiVersion"), "v1");
    assert_eq!(str_at(regarding, "/uid"), "uid-shop");
    assert_eq!(str_at(regarding, "/resourceVersion"), "3");
    assert!(regarding.get("namespace").is_none(), "{regarding}");
}

#[tokio::test]
async fn publish_for_refers_to_the_object_with_its_resource_version() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("web".into());
    cm.metadata.namespace = Some("shop".into());
    cm.metadata.uid = Some("uid-web".into());
    cm.metadata.resource_version = Some("7".into());

    recorder
        .publish_for(&cm, &event("Synced", ""))
        .await
        .unwrap();

    assert_eq!(
        fake.sent()[0].body["regarding"],
        serde_json::to_value(config_map("web")).unwrap()
    );
}

#[tokio::test]
async fn a_name_that_would_be_invalid_falls_back_to_a_uuid() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    let mut role = config_map("system:basic-user");
    role.namespace = None;

    recorder.publish(&role, &event("Seen", "")).await.unwrap();

    let name = str_at(&fake.sent()[0].body, "/metadata/name").to_owned();
    let groups: Vec<usize> = name.split('-').map(str::len).collect();
    assert_eq!(groups, [8, 4, 4, 4, 12], "{name}");
    assert_eq!(&name[14..15], "4", "a version 4 UUID: {name}");
    assert!(is_dns_subdomain(&name), "{name}");
}

#[test]
fn event_names_follow_client_go() {
    assert_eq!(event_name("web", 0x1234), "web.1234");
    assert_eq!(
        event_name("a.b-c", START.into()),
        format!("a.b-c.{START:x}")
    );
    // Upper case, a colon, too long: a UUID.
    for bad in ["Web", "system:node", &"a".repeat(252)] {
        let name = event_name(bad, 1);
        assert_eq!(name.len(), 36, "{bad}: {name}");
    }
}

#[tokio::test]
async fn names_are_unique_within_a_recorder_while_the_clock_stands_still() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));

    recorder
        .publish(&config_map("web"), &event("A", ""))
        .await
        .unwrap();
    recorder
        .publish(&config_map("web"), &event("B", ""))
        .await
        .unwrap();

    let names: Vec<String> = fake
        .sent()
        .iter()
        .map(|s| str_at(&s.body, "/metadata/name").to_owned())
        .collect();
    assert_eq!(
        names,
        [format!("web.{START:x}"), format!("web.{:x}", START + 1)]
    );
}

#[tokio::test]
async fn a_long_note_is_cut_to_1024_bytes_on_a_character_boundary() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    // 1023 bytes of ASCII, then a 3-byte character straddling the limit.
    let note = format!("{}€ and more", "x".repeat(1023));

    recorder
        .publish(&config_map("web"), &event("Long", &note))
        .await
        .unwrap();

    let sent = str_at(&fake.sent()[0].body, "/note").to_owned();
    assert_eq!(sent, "x".repeat(1023));
    assert_eq!(truncated(&"y".repeat(2000), NOTE_LIMIT).len(), 1024);
    assert_eq!(truncated("short", NOTE_LIMIT), "short");
}

#[tokio::test]
async fn an_invalid_event_fails_without_a_request() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    let long = "R".repeat(129);
    let cases = [
        ("", "Validate", "reason is empty"),
        (long.as_str(), "Validate", "reason is 129 bytes long"),
        ("Invalid", "", "action is empty"),
        ("Invalid", long.as_str(), "action is 129 bytes long"),
    ];
    for (reason, action, expected) in cases {
        let bad = Event {
            reason: reason.into(),
            action: action.into(),
            ..Event::default()
        };
        let error = recorder
            .publish(&config_map("web"), &bad)
            .await
            .unwrap_err();
        assert!(
            matches!(
                &error,
                kube::Error::BuildRequest(kube::core::request::Error::Validation(_))
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains(expected), "{error}");
    }
    // 128 bytes is fine.
    let at_limit = Event {
        reason: "R".repeat(128),
        action: "A".repeat(128),
        ..Event::default()
    };
    recorder
        .publish(&config_map("web"), &at_limit)
        .await
        .unwrap();
    assert_eq!(fake.methods(), ["POST"], "only the valid event was sent");
    assert_eq!(
        recorder.remembered(),
        1,
        "the refused ones are not remembered"
    );
}

#[tokio::test]
async fn an_invalid_reporter_fails_without_a_request() {
    let fake = Fake::default();
    let client = Client::new(fake.clone(), "default");
    let clock = TestClock::at(START);
    for (controller, instance, expected) in [
        ("", "i", "not a qualified name"),
        ("has space", "i", "not a qualified name"),
        ("Bad_Prefix/name", "i", "not a qualified name"),
        ("widget-controller", "", "reporting instance is empty"),
        (
            "widget-controller",
            &"i".repeat(129),
            "reporting instance is 129 bytes",
        ),
    ] {
        let reporter = Reporter {
            controller: controller.into(),
            instance: instance.into(),
        };
        let recorder = EventRecorder::with_parts(Some(client.clone()), reporter, clock.clone(), 8);
        let error = recorder
            .publish(&config_map("web"), &event("Invalid", ""))
            .await
            .unwrap_err();
        assert!(error.to_string().contains(expected), "{error}");
    }
    assert!(fake.sent().is_empty());
}

#[test]
fn qualified_names_are_apimachinerys() {
    for good in [
        "widget-controller",
        "Widget_Controller.v2",
        "example.com/widget-controller",
        "a",
        &"a".repeat(63),
    ] {
        assert!(is_qualified_name(good), "{good}");
    }
    for bad in [
        "",
        "-leading",
        "trailing.",
        "a/b/c",
        "/name",
        "Example.com/name",
        &"a".repeat(64),
    ] {
        assert!(!is_qualified_name(bad), "{bad}");
    }
}

#[tokio::test]
async fn a_repeat_within_the_window_patches_the_series_count() {
    let fake = Fake::default();
    let clock = TestClock::at(START);
    let recorder = recorder(&fake, clock.clone());
    let web = config_map("web");
    let invalid = event("InvalidConfig", "port is not a number");

    recorder.publish(&web, &invalid).await.unwrap();
    clock.advance(Duration::from_secs(60));
    recorder.publish(&web, &invalid).await.unwrap();
    // Just within six minutes of the last occurrence (not of the first).
    clock.advance(SERIES_WINDOW);
    recorder.publish(&web, &invalid).await.unwrap();

    let sent = fake.sent();
    assert_eq!(fake.methods(), ["POST", "PATCH", "PATCH"]);
    let name = str_at(&sent[0].body, "/metadata/name");
    for (patch, count, time) in [(&sent[1], 2, "03:05:05"), (&sent[2], 3, "03:11:05")] {
        assert_eq!(
            patch.path,
            format!("/apis/events.k8s.io/v1/namespaces/shop/events/{name}")
        );
        assert_eq!(patch.content_type, "application/merge-patch+json");
        assert_eq!(
            patch.body,
            json!({"series": {
                "count": count,
                "lastObservedTime": format!("2025-01-02T{time}.123456Z"),
            }})
        );
    }
    assert_eq!(recorder.remembered(), 1);
}

#[tokio::test]
async fn the_series_key_ignores_the_note() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    let web = config_map("web");

    recorder
        .publish(&web, &event("Invalid", "port 1"))
        .await
        .unwrap();
    recorder
        .publish(&web, &event("Invalid", "port 2"))
        .await
        .unwrap();

    assert_eq!(fake.methods(), ["POST", "PATCH"]);
    assert_eq!(fake.sent()[1].body["series"]["count"], 2);
}

#[tokio::test]
async fn type_reason_action_regarding_and_related_each_start_another_event() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    let web = config_map("web");
    let base = event("Invalid", "");
    let mut changed_rv = web.clone();
    changed_rv.resource_version = Some("8".into());
    let variants = [
        (web.clone(), base.clone()),
        (
            web.clone(),
            Event {
                type_: EventType::Normal,
                ..base.clone()
            },
        ),
        (
            web.clone(),
            Event {
                reason: "Other".into(),
                ..base.clone()
            },
        ),
        (
            web.clone(),
            Event {
                action: "Other".into(),
                ..base.clone()
            },
        ),
        (config_map("api"), base.clone()),
        // The object changed: client-go's key holds the reference's resource version.
        (changed_rv, base.clone()),
        (
            web.clone(),
            Event {
                related: Some(config_map("child")),
                ..base.clone()
            },
        ),
    ];
    for (regarding, event) in &variants {
        recorder.publish(regarding, event).await.unwrap();
    }
    assert_eq!(fake.methods(), vec!["POST"; variants.len()]);

    // An empty related reference is no related object, as in client-go.
    let empty_related = Event {
        related: Some(ObjectReference::default()),
        ..base.clone()
    };
    recorder.publish(&web, &empty_related).await.unwrap();
    assert_eq!(fake.methods().last().map(String::as_str), Some("PATCH"));
}

#[tokio::test]
async fn a_repeat_after_the_window_creates_a_new_event() {
    let fake = Fake::default();
    let clock = TestClock::at(START);
    let recorder = recorder(&fake, clock.clone());
    let web = config_map("web");
    let invalid = event("Invalid", "");

    recorder.publish(&web, &invalid).await.unwrap();
    recorder.publish(&web, &invalid).await.unwrap();
    clock.advance(SERIES_WINDOW + Duration::from_micros(1));
    recorder.publish(&web, &invalid).await.unwrap();
    recorder.publish(&web, &invalid).await.unwrap();

    let sent = fake.sent();
    assert_eq!(fake.methods(), ["POST", "PATCH", "POST", "PATCH"]);
    let first = str_at(&sent[0].body, "/metadata/name");
    let second = str_at(&sent[2].body, "/metadata/name");
    assert_ne!(first, second);
    assert!(
        sent[2].body.get("series").is_none(),
        "a new Event, no series"
    );
    assert!(sent[3].path.ends_with(second), "the new Event's series");
    assert_eq!(sent[3].body["series"]["count"], 2);
}

#[tokio::test]
async fn a_patch_that_finds_the_event_gone_creates_it_again() {
    let fake = Fake::default();
    let clock = TestClock::at(START);
    let recorder = recorder(&fake, clock.clone());
    let web = config_map("web");

    recorder
        .publish(&web, &event("Invalid", "first"))
        .await
        .unwrap();
    clock.advance(Duration::from_secs(1));
    fake.answer_next(404, "NotFound");
    recorder
        .publish(&web, &event("Invalid", "second"))
        .await
        .unwrap();
    recorder
        .publish(&web, &event("Invalid", "third"))
        .await
        .unwrap();

    let sent = fake.sent();
    assert_eq!(fake.methods(), ["POST", "PATCH", "POST", "PATCH"]);
    let name = str_at(&sent[0].body, "/metadata/name");
    let again = &sent[2].body;
    assert_eq!(str_at(again, "/metadata/name"), name, "the same name");
    assert_eq!(str_at(again, "/eventTime"), "2025-01-02T03:04:05.123456Z");
    assert_eq!(
        again["series"],
        json!({"count": 2, "lastObservedTime": "2025-01-02T03:04:06.123456Z"})
    );
    assert_eq!(str_at(again, "/note"), "second");
    assert_eq!(sent[3].body["series"]["count"], 3, "the series goes on");
}

#[tokio::test]
async fn a_recreation_that_finds_the_event_back_patches_it() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    let web = config_map("web");

    recorder.publish(&web, &event("Invalid", "")).await.unwrap();
    fake.answer_next(404, "NotFound");
    fake.answer_next(409, "AlreadyExists");
    recorder.publish(&web, &event("Invalid", "")).await.unwrap();

    assert_eq!(fake.methods(), ["POST", "PATCH", "POST", "PATCH"]);
    assert_eq!(fake.sent()[3].body["series"]["count"], 2);
}

#[tokio::test]
async fn failures_are_returned_and_a_failed_first_occurrence_is_forgotten() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    let web = config_map("web");
    let invalid = event("Invalid", "");

    fake.answer_next(500, "InternalError");
    let error = recorder.publish(&web, &invalid).await.unwrap_err();
    assert!(
        matches!(&error, kube::Error::Api(s) if s.code == 500),
        "{error:?}"
    );
    assert_eq!(recorder.remembered(), 0);

    // Created anew, then a failed patch: returned, and still counted.
    recorder.publish(&web, &invalid).await.unwrap();
    fake.answer_next(503, "ServiceUnavailable");
    let error = recorder.publish(&web, &invalid).await.unwrap_err();
    assert!(
        matches!(&error, kube::Error::Api(s) if s.code == 503),
        "{error:?}"
    );
    recorder.publish(&web, &invalid).await.unwrap();

    let sent = fake.sent();
    assert_eq!(fake.methods(), ["POST", "POST", "PATCH", "PATCH"]);
    assert_eq!(sent[3].body["series"]["count"], 3);
}

#[tokio::test]
async fn the_cache_forgets_the_series_seen_least_recently_past_its_capacity() {
    let fake = Fake::default();
    let clock = TestClock::at(START);
    let recorder = recorder_with(&fake, clock.clone(), 2);
    let invalid = event("Invalid", "");
    let publish = async |name: &str| {
        clock.advance(Duration::from_secs(1));
        recorder.publish(&config_map(name), &invalid).await.unwrap();
        fake.methods().pop().unwrap()
    };

    assert_eq!(publish("a").await, "POST");
    assert_eq!(publish("b").await, "POST");
    assert_eq!(publish("a").await, "PATCH", "a seen again: b is the oldest");
    assert_eq!(publish("c").await, "POST", "b forgotten");
    assert_eq!(recorder.remembered(), 2);
    assert_eq!(publish("a").await, "PATCH", "a still remembered");
    assert_eq!(publish("b").await, "POST", "b was forgotten: a new Event");
    assert_eq!(recorder.remembered(), 2);
}

#[tokio::test]
async fn series_past_the_window_are_forgotten() {
    let fake = Fake::default();
    let clock = TestClock::at(START);
    let recorder = recorder(&fake, clock.clone());
    for name in ["a", "b", "c"] {
        recorder
            .publish(&config_map(name), &event("Invalid", ""))
            .await
            .unwrap();
    }
    assert_eq!(recorder.remembered(), 3);

    clock.advance(SERIES_WINDOW + Duration::from_secs(1));
    recorder
        .publish(&config_map("d"), &event("Invalid", ""))
        .await
        .unwrap();

    assert_eq!(recorder.remembered(), 1, "only d");
}

#[tokio::test]
async fn clones_share_the_series() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    let clone = recorder.clone();

    recorder
        .publish(&config_map("web"), &event("Invalid", ""))
        .await
        .unwrap();
    clone
        .publish(&config_map("web"), &event("Invalid", ""))
        .await
        .unwrap();

    assert_eq!(fake.methods(), ["POST", "PATCH"]);
    assert!(format!("{clone:?}").contains("series: 1"), "{clone:?}");
}

#[tokio::test]
async fn a_recorder_without_a_client_fails_with_no_client() {
    let recorder = EventRecorder::without_client(reporter());

    let error = recorder
        .publish(&config_map("web"), &event("Invalid", ""))
        .await
        .unwrap_err();

    assert!(matches!(&error, kube::Error::Service(_)), "{error:?}");
    assert!(
        error.to_string().contains("no Kubernetes client"),
        "{error}"
    );
    assert_eq!(recorder.remembered(), 0);
    // An invalid event still says what is wrong with it.
    let error = recorder
        .publish(&config_map("web"), &event("", ""))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("reason is empty"), "{error}");
}

#[test]
fn the_instance_is_pod_name_then_hostname_then_the_host_name() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    };
    let kernel = || Some("node-host\n".to_owned());
    assert_eq!(
        instance_from(env(&[("POD_NAME", "web-0"), ("HOSTNAME", "h")]), kernel).as_deref(),
        Some("web-0")
    );
    assert_eq!(
        instance_from(env(&[("POD_NAME", ""), ("HOSTNAME", "h")]), kernel).as_deref(),
        Some("h")
    );
    assert_eq!(
        instance_from(env(&[]), kernel).as_deref(),
        Some("node-host")
    );
    assert_eq!(instance_from(env(&[]), || None), None);
    // Longer than the API takes: the next one.
    let long: &'static str = "p".repeat(129).leak();
    let pairs: &'static [(&str, &str)] = vec![("POD_NAME", long), ("HOSTNAME", "h")].leak();
    assert_eq!(instance_from(env(pairs), kernel).as_deref(), Some("h"));
}

#[test]
fn a_reporter_falls_back_to_the_controllers_name() {
    let reporter = Reporter::new("widget-controller");
    assert_eq!(reporter.controller, "widget-controller");
    assert!(!reporter.instance.is_empty() && reporter.instance.len() <= FIELD_LIMIT);
}

#[test]
fn micro_time_keeps_microseconds() {
    let time = UNIX_EPOCH + Duration::from_nanos(START);
    let json = serde_json::to_value(micro_time(time)).unwrap();
    assert_eq!(json, "2025-01-02T03:04:05.123456Z");
}

/// Lets the recording tasks run until `fake` has seen `requests` requests (time paused:
/// sleeps end as soon as nothing else can run).
async fn until_sent(fake: &Fake, requests: usize) {
    for _ in 0..10_000 {
        if fake.sent().len() >= requests {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{} requests, not {requests}", fake.sent().len());
}

#[tokio::test(start_paused = true)]
async fn record_writes_the_event_in_the_background_as_publish_would() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    recorder.record(config_map("web"), event("Invalid", "bad port"));
    assert!(fake.sent().is_empty(), "record returns before the write");
    until_sent(&fake, 1).await;
    let sent = &fake.sent()[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(str_at(&sent.body, "/reason"), "Invalid");
    // A repeat joins the series, as with publish.
    recorder.record(config_map("web"), event("Invalid", "bad port"));
    until_sent(&fake, 2).await;
    assert_eq!(fake.methods(), ["POST", "PATCH"]);
    assert_eq!(fake.sent()[1].body["series"]["count"], 2);
}

#[tokio::test(start_paused = true)]
async fn a_recorded_event_the_server_cannot_be_reached_for_is_tried_again_after_about_ten_seconds()
{
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    fake.unreachable_next(2);
    let started = tokio::time::Instant::now();
    recorder.record(config_map("web"), event("Invalid", ""));
    until_sent(&fake, 3).await;
    let waited = started.elapsed();
    // Two waits of 10 s stretched by up to a quarter.
    assert!(
        waited >= Duration::from_secs(20) && waited < Duration::from_millis(25_200),
        "{waited:?}"
    );
    assert_eq!(fake.methods(), ["POST", "POST", "POST"]);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(fake.sent().len(), 3, "written: no more tries");
}

#[tokio::test(start_paused = true)]
async fn a_recorded_event_is_tried_twelve_times_at_most() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    fake.unreachable_next(20);
    recorder.record(config_map("web"), event("Invalid", ""));
    until_sent(&fake, 12).await;
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(fake.sent().len(), 12);
}

#[tokio::test(start_paused = true)]
async fn a_recorded_event_the_server_refuses_is_not_tried_again() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    fake.answer_next(503, "ServiceUnavailable");
    recorder.record(config_map("web"), event("Invalid", ""));
    until_sent(&fake, 1).await;
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(
        fake.sent().len(),
        1,
        "an answer is not retried, as in client-go"
    );
}

#[tokio::test(start_paused = true)]
async fn an_invalid_recorded_event_is_never_sent() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    recorder.record(config_map("web"), event("", ""));
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(fake.sent().is_empty());
}

#[tokio::test(start_paused = true)]
async fn recorded_events_past_the_limit_waiting_are_dropped_and_counted() {
    let fake = Fake::default();
    let recorder = recorder(&fake, TestClock::at(START));
    fake.unreachable_next(RECORD_QUEUE * RECORD_TRIES as usize);
    for i in 0..RECORD_QUEUE + 5 {
        recorder.record(config_map(&format!("cm-{i}")), event("Invalid", ""));
    }
    assert_eq!(recorder.dropped(), 5);
    until_sent(&fake, RECORD_QUEUE).await;
    // Those given up on make room again.
    tokio::time::sleep(Duration::from_secs(600)).await;
    recorder.record(config_map("later"), event("Invalid", ""));
    assert_eq!(recorder.dropped(), 5);
}

#[test]
fn record_outside_a_runtime_records_nothing_and_does_not_panic() {
    let fake = Fake::default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // A kube client is made inside a runtime; the record is outside it.
    let recorder = runtime.block_on(async { recorder(&fake, TestClock::at(START)) });
    recorder.record(config_map("web"), event("Invalid", ""));
    runtime.block_on(async { tokio::time::sleep(Duration::from_millis(50)).await });
    assert!(fake.sent().is_empty());
}
