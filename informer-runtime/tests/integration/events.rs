//! The Event recorder through a real `kube::Client` against the in-process API server, which
//! serves events.k8s.io/v1 and core v1 Events from one storage as kube-apiserver does: what
//! an Event reads like through both APIs, a repeat counted in a series, an Event deleted
//! mid-series written again, and the recorder of a controller's context reporting as the
//! controller.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::support::{eventually_async, server};
use informer_core::ObjectKey;
use informer_runtime::controller::{
    Action, Context, Controller, ControllerBuilder, ControllerContext, ControllerSpec, Reconcile,
    ReconcileError, reconciler_fn,
};
use informer_runtime::events::{Event, EventRecorder, EventType, Reporter};
use informer_runtime::factory::InformerFactory;
use informer_runtime::informer::CancellationToken;
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent};
use k8s_openapi::api::events::v1::Event as ApiEvent;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client, ResourceExt};

/// Creates ConfigMap `default/name`.
async fn config_map(client: &Client, name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.data = Some(BTreeMap::from([("port".into(), "eighty".into())]));
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap()
}

/// The events.k8s.io Events in `default` about the object named `name`.
async fn events_about(client: &Client, name: &str) -> Vec<ApiEvent> {
    Api::<ApiEvent>::namespaced(client.clone(), "default")
        .list(&ListParams::default().fields(&format!("regarding.name={name}")))
        .await
        .unwrap()
        .items
}

fn invalid_port() -> Event {
    Event {
        type_: EventType::Warning,
        reason: "InvalidConfig".into(),
        action: "Validate".into(),
        note: Some("port is not a number".into()),
        related: None,
    }
}

fn reporter() -> Reporter {
    Reporter {
        controller: "example.com/settings-controller".into(),
        instance: "settings-controller-0".into(),
    }
}

#[tokio::test]
async fn an_event_about_a_config_map_reads_through_both_apis() {
    let server = server().await;
    let client = server.client();
    let cm = config_map(&client, "settings").await;
    let recorder = EventRecorder::new(client.clone(), reporter());

    recorder.publish_for(&cm, &invalid_port()).await.unwrap();

    let events = events_about(&client, "settings").await;
    assert_eq!(events.len(), 1, "{events:#?}");
    let event = &events[0];
    let name = event.name_any();
    assert!(name.starts_with("settings."), "{name}");
    assert_eq!(
        event.reporting_controller.as_deref(),
        Some("example.com/settings-controller")
    );
    assert_eq!(
        event.reporting_instance.as_deref(),
        Some("settings-controller-0")
    );
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.reason.as_deref(), Some("InvalidConfig"));
    assert_eq!(event.action.as_deref(), Some("Validate"));
    assert_eq!(event.note.as_deref(), Some("port is not a number"));
    assert!(event.event_time.is_some());
    assert_eq!(event.series, None);
    let regarding = event.regarding.as_ref().unwrap();
    assert_eq!(regarding.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(regarding.api_version.as_deref(), Some("v1"));
    assert_eq!(regarding.namespace.as_deref(), Some("default"));
    assert_eq!(regarding.uid, cm.metadata.uid);
    assert_eq!(regarding.resource_version, cm.metadata.resource_version);

    // The same Event through the core v1 API (`kubectl get events`, `kubectl describe`).
    let core = Api::<CoreEvent>::namespaced(client.clone(), "default")
        .get(&name)
        .await
        .unwrap();
    assert_eq!(core.involved_object.name.as_deref(), Some("settings"));
    assert_eq!(core.involved_object.uid, cm.metadata.uid);
    assert_eq!(core.reason.as_deref(), Some("InvalidConfig"));
    assert_eq!(core.message.as_deref(), Some("port is not a number"));
    assert_eq!(core.type_.as_deref(), Some("Warning"));
    assert_eq!(
        core.reporting_component.as_deref(),
        Some("example.com/settings-controller")
    );
    // As kube-apiserver converts an events.k8s.io Event: `source` and `count` are the
    // deprecated fields, which that API refuses to set; kubectl shows the reporting
    // controller and the series count instead.
    assert_eq!(core.source.and_then(|s| s.component), None);
    assert_eq!(core.count, None);
}

#[tokio::test]
async fn a_repeat_becomes_a_series_of_two() {
    let server = server().await;
    let client = server.client();
    let cm = config_map(&client, "settings").await;
    let recorder = EventRecorder::new(client.clone(), reporter());

    recorder.publish_for(&cm, &invalid_port()).await.unwrap();
    let mut again = invalid_port();
    again.note = Some("port is still not a number".into());
    recorder.publish_for(&cm, &again).await.unwrap();

    let events = events_about(&client, "settings").await;
    assert_eq!(events.len(), 1, "one Event: {events:#?}");
    let series = events[0].series.as_ref().expect("a series");
    assert_eq!(series.count, 2);
    assert!(series.last_observed_time >= *events[0].event_time.as_ref().unwrap());
    assert_eq!(
        events[0].note.as_deref(),
        Some("port is not a number"),
        "the first note stays"
    );
    let core = Api::<CoreEvent>::namespaced(client.clone(), "default")
        .get(&events[0].name_any())
        .await
        .unwrap();
    assert_eq!(core.series.and_then(|s| s.count), Some(2));

    recorder.publish_for(&cm, &invalid_port()).await.unwrap();
    let events = events_about(&client, "settings").await;
    assert_eq!(events[0].series.as_ref().map(|s| s.count), Some(3));
}

#[tokio::test]
async fn an_event_deleted_mid_series_is_written_again() {
    let server = server().await;
    let client = server.client();
    let cm = config_map(&client, "settings").await;
    let recorder = EventRecorder::new(client.clone(), reporter());
    recorder.publish_for(&cm, &invalid_port()).await.unwrap();
    let name = events_about(&client, "settings").await[0].name_any();

    Api::<ApiEvent>::namespaced(client.clone(), "default")
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    recorder.publish_for(&cm, &invalid_port()).await.unwrap();

    let events = events_about(&client, "settings").await;
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0].name_any(), name, "under its name");
    assert_eq!(events[0].series.as_ref().map(|s| s.count), Some(2));
}

#[tokio::test]
async fn an_invalid_event_is_refused_before_the_server_sees_it() {
    let server = server().await;
    let client = server.client();
    let cm = config_map(&client, "settings").await;
    let recorder = EventRecorder::new(client.clone(), reporter());
    let no_reason = Event {
        reason: String::new(),
        ..invalid_port()
    };

    let error = recorder.publish_for(&cm, &no_reason).await.unwrap_err();

    assert!(error.to_string().contains("reason is empty"), "{error}");
    assert!(events_about(&client, "settings").await.is_empty());
}

/// A controller publishing an Event for every ConfigMap it reconciles, as
/// `#[derive(ControllerSpec)]` would write it.
struct Validator;

impl ControllerSpec for Validator {
    type Resource = ConfigMap;
    type Listers = ();

    fn configure(&self, builder: ControllerBuilder<ConfigMap>) -> ControllerBuilder<ConfigMap> {
        builder.name("config-validator").namespace("default")
    }

    fn listers(_: &Controller<ConfigMap>) {}
}

impl Reconcile for Validator {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        _key: &ObjectKey,
        cm: Option<Arc<ConfigMap>>,
    ) -> Result<Action, ReconcileError> {
        let Some(cm) = cm else {
            return Ok(Action::Done);
        };
        if let Err(error) = ctx.recorder().publish_for(&*cm, &invalid_port()).await {
            tracing::warn!(%error, "event not recorded");
        }
        Ok(Action::Done)
    }
}

#[tokio::test]
async fn a_derived_controllers_recorder_reports_as_the_controller() {
    let server = server().await;
    let client = server.client();
    config_map(&client, "settings").await;
    let controller = Validator
        .into_controller(&InformerFactory::new(client.clone()))
        .unwrap();
    let event = run_until_an_event_about_settings(controller, &client).await;
    assert_eq!(
        event.reporting_controller.as_deref(),
        Some("config-validator")
    );
    assert!(
        !event
            .reporting_instance
            .as_deref()
            .unwrap_or_default()
            .is_empty()
    );
    assert_eq!(event.reason.as_deref(), Some("InvalidConfig"));
}

#[tokio::test]
async fn a_builder_controllers_recorder_reports_with_its_name() {
    let server = server().await;
    let client = server.client();
    config_map(&client, "settings").await;
    let factory = InformerFactory::new(client.clone());
    let builder = Controller::<ConfigMap>::builder(&factory)
        .name("settings-watcher")
        .namespace("default");
    let recorder = builder.event_recorder();
    let controller = builder
        .build(reconciler_fn(move |_key, cm: Option<Arc<ConfigMap>>| {
            let recorder = recorder.clone();
            async move {
                let Some(cm) = cm else {
                    return Ok(Action::Done);
                };
                recorder.publish_for(&*cm, &invalid_port()).await?;
                Ok(Action::Done)
            }
        }))
        .unwrap();
    assert_eq!(
        ControllerContext::new(&controller)
            .recorder()
            .reporter()
            .controller,
        "settings-watcher",
        "the context's recorder reports as the controller too"
    );
    let event = run_until_an_event_about_settings(controller, &client).await;
    assert_eq!(
        event.reporting_controller.as_deref(),
        Some("settings-watcher")
    );
}

/// Runs `controller` until an Event about ConfigMap `settings` is published; returns it.
async fn run_until_an_event_about_settings(
    controller: Controller<ConfigMap>,
    client: &Client,
) -> ApiEvent {
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    eventually_async("the controller publishes an Event", async || {
        !events_about(client, "settings").await.is_empty()
    })
    .await;
    cancel.cancel();
    run.await.unwrap();
    events_about(client, "settings").await.remove(0)
}
