//! Declared status and failure status of a derived controller, end to end through a real
//! `kube::Client`, against both API servers from one test body.
//!
//! A `Gauge` (a custom resource) has a status of conditions, against `metav1.Condition`'s
//! schema: declared (`status = f`), written from `on_error` with `ctx.apply_status`, and
//! both at once, where a failed reconcile's status must not be overwritten by the declared
//! one.

use informer::prelude::*;
use informer::runtime::conditions::{
    CONDITION_FALSE, CONDITION_TRUE, UNSET_TIME, find_status_condition, set_status_condition,
};
use informer::runtime::controller::Filter;
use informer_testing::{ApiError, FailureCode, RequestMatch, Verb};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::servers::{Server, on_both_servers, until};

/// A gauge whose status keeps conditions, with `metav1.Condition`'s schema from
/// `conditions::schema` (no k8s-openapi `schemars` feature).
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "children.example.com",
    version = "v1",
    kind = "Gauge",
    namespaced,
    status = "GaugeStatus"
)]
struct GaugeSpec {
    level: i32,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct GaugeStatus {
    #[serde(default)]
    #[schemars(schema_with = "informer::runtime::conditions::schema")]
    conditions: Vec<Condition>,
    /// When `Ready` last changed: a `Time` with `conditions::time_schema`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "informer::runtime::conditions::time_schema")]
    ready_since: Option<Time>,
}

/// `Ready` while the level is not negative.
fn gauge_status(gauge: &Gauge) -> GaugeStatus {
    let ok = gauge.spec.level >= 0;
    let (status, reason) = if ok {
        (CONDITION_TRUE, "InRange")
    } else {
        (CONDITION_FALSE, "Negative")
    };
    let message = format!("level {}", gauge.spec.level);
    set_ready(gauge, status, reason, message).0
}

/// The gauge's status with its `Ready` condition set as given, and whether that changed it.
fn set_ready(gauge: &Gauge, status: &str, reason: &str, message: String) -> (GaugeStatus, bool) {
    let mut conditions = gauge
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let ready = Condition {
        type_: "Ready".into(),
        status: status.into(),
        reason: reason.into(),
        message,
        observed_generation: gauge.metadata.generation,
        last_transition_time: UNSET_TIME,
    };
    let changed = set_status_condition(&mut conditions, ready);
    let ready_since =
        find_status_condition(&conditions, "Ready").map(|ready| ready.last_transition_time.clone());
    (
        GaugeStatus {
            conditions,
            ready_since,
        },
        changed,
    )
}

/// A controller of gauges running against a server, and gauge `boiler`, created at a level.
struct Boiler {
    gauges: Api<Gauge>,
    cancel: CancellationToken,
    run: JoinHandle<()>,
}

impl Boiler {
    /// Starts the controller `spec` (its `run_until`) and creates `boiler` at `level`.
    async fn start<F, E>(
        server: &Server,
        level: i32,
        run_until: impl FnOnce(kube::Client, CancellationToken) -> F,
    ) -> Self
    where
        F: Future<Output = Result<(), E>> + Send + 'static,
        E: std::fmt::Debug,
    {
        let client = server.client();
        let cancel = CancellationToken::new();
        let running = run_until(client.clone(), cancel.clone());
        let run = tokio::spawn(async move {
            running.await.expect("the controller stops cleanly");
        });
        let gauges = Api::<Gauge>::namespaced(client, "default");
        gauges
            .create(
                &PostParams::default(),
                &Gauge::new("boiler", GaugeSpec { level }),
            )
            .await
            .expect("a gauge is created");
        Self {
            gauges,
            cancel,
            run,
        }
    }

    /// The gauge as the server has it, and its `Ready` condition.
    async fn ready(&self) -> (Gauge, Option<Condition>) {
        let gauge = self
            .gauges
            .get("boiler")
            .await
            .expect("the gauge can be read");
        let conditions = gauge
            .status
            .clone()
            .map(|s| s.conditions)
            .unwrap_or_default();
        let ready = find_status_condition(&conditions, "Ready").cloned();
        (gauge, ready)
    }

    /// Waits until the `Ready` condition passes `check`.
    async fn until_ready(&self, what: &str, check: impl Fn(&Condition) -> bool) {
        until(what, async || {
            self.ready().await.1.is_some_and(|c| check(&c))
        })
        .await;
    }

    async fn set_level(&self, level: i32) {
        let patch = Patch::Merge(json!({"spec": {"level": level}}));
        self.gauges
            .patch("boiler", &PatchParams::default(), &patch)
            .await
            .expect("the gauge is changed");
    }

    async fn stop(self) {
        self.cancel.cancel();
        self.run.await.expect("the controller task ends");
    }
}

#[derive(ControllerSpec)]
#[controller(for = Gauge, namespace = "default", status = gauge_status)]
struct Gauges;

impl Reconcile for Gauges {}

/// Spec changes only: status and metadata writes do not queue a gauge.
fn spec_changes() -> Filter<Gauge> {
    Filter::generation_changed()
}

#[derive(ControllerSpec)]
#[controller(for = Gauge, namespace = "default", status = gauge_status, filter = spec_changes)]
struct SpecChangesOnly;

impl Reconcile for SpecChangesOnly {}

/// A declared status whose write finds a newer gauge (409) is computed again after the
/// backoff: the newer version's own event may never pass the filter (here, a gauge whose
/// status write conflicts once, and nothing changes after), and the status would stay
/// stale for good.
#[tokio::test]
async fn a_declared_status_that_conflicts_is_written_again_under_a_generation_filter() {
    let server = Server::fake([Gauge::crd()]).await;
    let Server::Fake(fake) = &server else {
        unreachable!("a fake server");
    };
    let boiler = Boiler::start(&server, 3, |client, cancel| {
        SpecChangesOnly.run_until(client, cancel)
    })
    .await;
    boiler
        .until_ready("Ready is True", |c| c.status == CONDITION_TRUE)
        .await;
    let status_writes = RequestMatch::verb(Verb::Patch)
        .resource("gauges")
        .subresource("status");
    let conflict = ApiError::conflict("gauges.children.example.com", "boiler", "injected");
    fake.faults()
        .fail_next(status_writes.clone(), 1, FailureCode::Status(conflict));
    boiler.set_level(-1).await;
    boiler
        .until_ready("Ready is False after the conflict", |c| {
            c.status == CONDITION_FALSE
        })
        .await;
    assert!(
        fake.faults().request_count(status_writes) >= 2,
        "the conflicting write, then the one after the backoff"
    );
    boiler.stop().await;
}

async fn a_gauges_conditions_are_written_against_the_condition_schema(server: Server) {
    let boiler = Boiler::start(&server, 3, |client, cancel| {
        Gauges.run_until(client, cancel)
    })
    .await;
    boiler
        .until_ready("Ready is True", |c| c.status == CONDITION_TRUE)
        .await;
    boiler.set_level(-1).await;
    boiler
        .until_ready("Ready is False", |c| c.status == CONDITION_FALSE)
        .await;
    // The CRD's schema is the one controller-gen writes for []metav1.Condition.
    let schema = serde_json::to_value(Gauge::crd().spec.versions[0].schema.clone()).unwrap();
    let conditions = &schema["openAPIV3Schema"]["properties"]["status"]["properties"]["conditions"];
    assert_eq!(conditions["x-kubernetes-list-map-keys"], json!(["type"]));
    assert_eq!(
        conditions["items"]["required"],
        json!(["lastTransitionTime", "message", "reason", "status", "type"])
    );
    // And a `Time` beside them, written with each status (the real server checks its format).
    let since = &schema["openAPIV3Schema"]["properties"]["status"]["properties"]["readySince"];
    assert_eq!(
        (&since["type"], &since["format"]),
        (&json!("string"), &json!("date-time"))
    );
    boiler.stop().await;
}

on_both_servers!(
    a_gauges_conditions_are_written_against_the_condition_schema,
    a_status_with_conditions_on_the_fake_server = Server::fake([Gauge::crd()]).await,
    a_status_with_conditions_on_the_real_server = Server::real([Gauge::crd()]).await,
);

/// The gauge's status with its `Ready` condition set as given, or `None` if it already says
/// so (nothing to write).
fn with_ready(gauge: &Gauge, status: &str, reason: &str, message: String) -> Option<GaugeStatus> {
    let (status, changed) = set_ready(gauge, status, reason, message);
    changed.then_some(status)
}

/// Refuses a negative level; its `on_error` writes the failure as `Ready=False` with
/// `ctx.apply_status`, and a reconcile that succeeds writes `Ready=True` the same way.
#[derive(ControllerSpec)]
#[controller(for = Gauge, namespace = "default", name = "gauge-checker")]
struct Checked;

impl Reconcile for Checked {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        _key: &ObjectKey,
        gauge: Option<Arc<Gauge>>,
    ) -> Result<Action, ReconcileError> {
        let Some(gauge) = gauge else {
            return Ok(Action::Done);
        };
        if gauge.spec.level < 0 {
            let message = format!("level {} is below zero", gauge.spec.level);
            return Err(ReconcileError::terminal(message));
        }
        let message = format!("level {}", gauge.spec.level);
        if let Some(status) = with_ready(&gauge, CONDITION_TRUE, "InRange", message) {
            ctx.apply_status(&gauge, &status).await?;
        }
        Ok(Action::Done)
    }

    async fn on_error(
        &self,
        ctx: &Context<Self>,
        _key: &ObjectKey,
        gauge: Option<Arc<Gauge>>,
        error: &ReconcileError,
    ) -> Action {
        write_failure(ctx, gauge.as_deref(), error).await
    }
}

/// What `on_error` does: the failure as `Ready=False`, written with `ctx.apply_status` when
/// the status does not say it yet; then the default retry.
async fn write_failure<C: ControllerSpec<Resource = Gauge>>(
    ctx: &Context<C>,
    gauge: Option<&Gauge>,
    error: &ReconcileError,
) -> Action {
    let failed = gauge.and_then(|gauge| {
        let status = with_ready(gauge, CONDITION_FALSE, "ReconcileFailed", error.to_string());
        Some((gauge, status?))
    });
    if let Some((gauge, status)) = failed {
        ctx.apply_status(gauge, &status)
            .await
            .expect("the failure status is written");
    }
    error.default_action()
}

async fn a_failure_status_is_written_from_on_error_with_apply_status(server: Server) {
    let boiler = Boiler::start(&server, -2, |client, cancel| {
        Checked.run_until(client, cancel)
    })
    .await;
    boiler
        .until_ready("Ready is False, with the error", |c| {
            c.status == CONDITION_FALSE && c.message.contains("level -2 is below zero")
        })
        .await;
    // Written as the controller's field manager, to the status subresource.
    let (gauge, _) = boiler.ready().await;
    let managers: Vec<_> = gauge
        .managed_fields()
        .iter()
        .map(|m| {
            (
                m.manager.clone(),
                m.operation.clone(),
                m.subresource.clone(),
            )
        })
        .collect();
    assert!(
        managers.contains(&(
            Some("gauge-checker".into()),
            Some("Apply".into()),
            Some("status".into())
        )),
        "{managers:?}"
    );
    boiler.set_level(4).await;
    boiler
        .until_ready("Ready is True", |c| {
            c.status == CONDITION_TRUE && c.reason == "InRange"
        })
        .await;
    boiler.stop().await;
}

/// `Ready=True` for any level: what a declared status says of a gauge whose children (none
/// here) are in line. It must not overwrite the failure `on_error` reports.
fn always_ready(gauge: &Gauge) -> GaugeStatus {
    let message = format!("level {}", gauge.spec.level);
    set_ready(gauge, CONDITION_TRUE, "InRange", message).0
}

/// A declared status, and a reconcile that refuses levels above 100, whose failure
/// `on_error` writes as `Ready=False`.
#[derive(ControllerSpec)]
#[controller(for = Gauge, namespace = "default", status = always_ready)]
struct DeclaredAndChecked;

impl Reconcile for DeclaredAndChecked {
    async fn reconcile(
        &self,
        _ctx: &Context<Self>,
        _key: &ObjectKey,
        gauge: Option<Arc<Gauge>>,
    ) -> Result<Action, ReconcileError> {
        match gauge {
            Some(gauge) if gauge.spec.level > 100 => Err(ReconcileError::terminal(format!(
                "level {} is above 100",
                gauge.spec.level
            ))),
            _ => Ok(Action::Done),
        }
    }

    async fn on_error(
        &self,
        ctx: &Context<Self>,
        _key: &ObjectKey,
        gauge: Option<Arc<Gauge>>,
        error: &ReconcileError,
    ) -> Action {
        write_failure(ctx, gauge.as_deref(), error).await
    }
}

async fn a_declared_status_is_not_written_over_the_failure_on_error_reports(server: Server) {
    let boiler = Boiler::start(&server, 200, |client, cancel| {
        DeclaredAndChecked.run_until(client, cancel)
    })
    .await;
    boiler
        .until_ready("Ready is False, with the error", |c| {
            c.reason == "ReconcileFailed"
        })
        .await;
    // It stays so: the declared status (Ready=True) is not applied after a failed
    // reconcile, so the two do not overwrite each other at every reconcile.
    let (settled, _) = boiler.ready().await;
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let (later, condition) = boiler.ready().await;
    assert_eq!(
        later.resource_version(),
        settled.resource_version(),
        "nothing is written once the failure is reported: {condition:?}"
    );
    // Mended, the reconcile succeeds and the declared status replaces the failure.
    boiler.set_level(7).await;
    boiler
        .until_ready("Ready is True", |c| {
            c.status == CONDITION_TRUE && c.message == "level 7"
        })
        .await;
    boiler.stop().await;
}

on_both_servers!(
    a_declared_status_is_not_written_over_the_failure_on_error_reports,
    a_declared_status_and_a_failure_from_on_error_on_the_fake_server =
        Server::fake([Gauge::crd()]).await,
    a_declared_status_and_a_failure_from_on_error_on_the_real_server =
        Server::real([Gauge::crd()]).await,
);

on_both_servers!(
    a_failure_status_is_written_from_on_error_with_apply_status,
    a_failure_status_from_on_error_on_the_fake_server = Server::fake([Gauge::crd()]).await,
    a_failure_status_from_on_error_on_the_real_server = Server::real([Gauge::crd()]).await,
);
