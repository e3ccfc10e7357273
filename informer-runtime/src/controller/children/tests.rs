use informer_core::ObjectKey;
use k8s_openapi::api::core::v1::ConfigMap;

use super::*;

#[test]
fn children_come_as_a_vec_an_option_or_a_result_of_either() {
    let vec: Vec<ConfigMap> = vec![ConfigMap::default(), ConfigMap::default()];
    assert_eq!(vec.into_children().unwrap().len(), 2);
    assert_eq!(
        IntoChildren::<ConfigMap>::into_children(None::<ConfigMap>)
            .unwrap()
            .len(),
        0
    );
    let ok: Result<Option<ConfigMap>, std::fmt::Error> = Ok(Some(ConfigMap::default()));
    assert_eq!(ok.into_children().unwrap().len(), 1);
    let failed: Result<Vec<ConfigMap>, String> = Err("no template".into());
    assert_eq!(
        failed.into_children().unwrap_err().to_string(),
        "no template"
    );
}

#[test]
fn a_report_names_what_was_written() {
    let child = |name: &str| ChildRef {
        api_version: "v1".into(),
        kind: "Secret".into(),
        key: ObjectKey::new(Some("default"), name),
        uid: None,
    };
    let report = ChildrenReport {
        created: vec![child("a")],
        updated: vec![],
        deleted: vec![child("b"), child("c")],
        unchanged: 4,
        ..ChildrenReport::default()
    };
    assert!(!report.is_unchanged());
    assert_eq!(
        report.to_string(),
        "created Secret default/a; deleted Secret default/b, Secret default/c"
    );
    let status_only = ChildrenReport {
        status_written: true,
        ..ChildrenReport::default()
    };
    assert!(!status_only.is_unchanged());
    assert_eq!(status_only.to_string(), "status written");
}

#[test]
fn mistakes_in_what_is_declared_are_terminal_and_failed_requests_transient() {
    let terminal = ChildrenError::NoName {
        kind: "Secret".into(),
    };
    assert!(terminal.into_reconcile_error().is_terminal());
    let transient = ChildrenError::Desired {
        kind: "Secret".into(),
        source: "boom".into(),
    };
    assert!(!transient.into_reconcile_error().is_terminal());
    assert!(!ChildrenError::NoClient.into_reconcile_error().is_terminal());
}

#[test]
fn a_children_function_failing_with_a_reconcile_error_keeps_its_kind() {
    let desired = |result: Result<Vec<ConfigMap>, ReconcileError>| ChildrenError::Desired {
        kind: "ConfigMap".into(),
        source: result.into_children().unwrap_err(),
    };
    let terminal = desired(Err(ReconcileError::terminal("replicas must be positive")));
    assert_eq!(terminal.kind(), ErrorKind::Terminal);
    assert_eq!(
        terminal.to_string(),
        "computing the ConfigMap children failed: replicas must be positive"
    );
    assert!(terminal.into_reconcile_error().is_terminal());
    let transient = desired(Err(ReconcileError::transient(
        "the template is not cached yet",
    )));
    assert_eq!(transient.kind(), ErrorKind::Transient);
    // A `?` on any other error inside the function stays transient.
    let parsed: Result<Vec<ConfigMap>, ReconcileError> = "x"
        .parse::<u32>()
        .map(|_| vec![])
        .map_err(ReconcileError::from);
    assert_eq!(desired(parsed).kind(), ErrorKind::Transient);
}

#[test]
fn an_api_error_reads_in_one_line_and_stays_the_source() {
    let status = kube::core::Status {
        code: 500,
        message: "Internal error occurred: injected failure".into(),
        reason: "InternalError".into(),
        ..Default::default()
    };
    let err = ChildrenError::ParentRead {
        parent: ObjectKey::new(Some("default"), "web"),
        source: kube::Error::Api(status.boxed()),
    };
    assert_eq!(
        err.to_string(),
        "reading default/web before creating its children failed: Internal error occurred: injected failure (500 InternalError)"
    );
    let source = std::error::Error::source(&err).expect("the request's error");
    assert!(source.to_string().contains("injected failure"));
}

fn taken_error() -> ReconcileError {
    ChildrenError::Exists {
        child: Box::new(ChildRef {
            api_version: "v1".into(),
            kind: "Secret".into(),
            key: ObjectKey::new(Some("default"), "app-token"),
            uid: None,
        }),
        controller: None,
    }
    .into_reconcile_error()
}

#[tokio::test]
async fn a_taken_child_name_is_looked_at_again_soon_not_after_a_growing_backoff() {
    let with_children = WithChildren::<ConfigMap, NoReconcile> {
        controller: "ctl".into(),
        validate: None,
        finalizer: None,
        children: Vec::new(),
        inner: NoReconcile,
    };
    let key = ObjectKey::new(Some("default"), "app");
    let action = with_children.on_error(&key, None, &taken_error()).await;
    assert_eq!(action, Action::RequeueAfter(TAKEN_RETRY));
    // Other transient errors keep the policy's answer: the backoff.
    let other = ReconcileError::transient(ChildrenError::NoClient);
    assert_eq!(
        with_children.on_error(&key, None, &other).await,
        Action::Requeue
    );
    assert!(
        taken_error()
            .to_string()
            .contains("give it a controlling owner reference to the parent")
    );
}

#[test]
fn nulls_are_dropped_from_what_is_applied() {
    let mut body = serde_json::json!({"a": null, "b": {"c": null, "d": 1}, "e": [{"f": null}, 2]});
    let serde_json::Value::Object(map) = &mut body else {
        unreachable!()
    };
    sync::drop_nulls(map);
    assert_eq!(body, serde_json::json!({"b": {"d": 1}, "e": [{}, 2]}));
}

#[test]
fn a_failed_read_before_a_create_says_so_and_is_retried() {
    let error = ChildrenError::Read {
        child: Box::new(ChildRef {
            api_version: "v1".into(),
            kind: "Secret".into(),
            key: ObjectKey::new(Some("default"), "app-token"),
            uid: None,
        }),
        source: kube::Error::Api(
            kube::core::Status::failure("secrets \"app-token\" is forbidden", "Forbidden")
                .with_code(403)
                .boxed(),
        ),
    };
    assert!(
        error
            .to_string()
            .starts_with("reading Secret default/app-token before creating it failed: "),
        "{error}"
    );
    assert_eq!(error.kind(), ErrorKind::Transient);
}

// ---------------------------------------------------------------- the order of the steps

/// A child type (or, with `after`, a declared status) that records its run and may fail.
struct Step {
    name: &'static str,
    fails: bool,
    after: bool,
    log: Arc<parking_lot::Mutex<Vec<&'static str>>>,
}

impl SyncChildren<ConfigMap> for Step {
    fn sync<'a>(
        &'a self,
        key: &'a ObjectKey,
        _parent: Option<&'a ConfigMap>,
        _report: &'a mut ChildrenReport,
    ) -> futures::future::BoxFuture<'a, Result<(), ChildrenError>> {
        self.log.lock().push(self.name);
        let result = match self.fails {
            // A step named `terminal...` fails as a children function refusing its parent.
            true if self.name.starts_with("terminal") => {
                let refused: Result<Vec<ConfigMap>, ReconcileError> =
                    Err(ReconcileError::terminal(self.name));
                Err(ChildrenError::Desired {
                    kind: "ConfigMap".into(),
                    source: refused.into_children().unwrap_err(),
                })
            }
            true => Err(ChildrenError::Status {
                parent: key.clone(),
                source: self.name.into(),
            }),
            false => Ok(()),
        };
        Box::pin(async move { result })
    }

    fn after_reconcile(&self) -> bool {
        self.after
    }
}

/// The log of a run of children steps `(name, fails, after)` around a reconcile that
/// fails if `reconcile_fails`, and the run's result.
async fn run_steps(
    steps: &[(&'static str, bool, bool)],
    reconcile_fails: bool,
) -> (Vec<&'static str>, Result<Action, ReconcileError>) {
    run_validated_steps(steps, reconcile_fails, None, None).await
}

/// [`run_steps`] for `object`, behind `validate`.
async fn run_validated_steps(
    steps: &[(&'static str, bool, bool)],
    reconcile_fails: bool,
    validate: Option<ValidateFn<ConfigMap>>,
    object: Option<ConfigMap>,
) -> (Vec<&'static str>, Result<Action, ReconcileError>) {
    let log = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let children = steps
        .iter()
        .map(|&(name, fails, after)| {
            let log = log.clone();
            Arc::new(Step {
                name,
                fails,
                after,
                log,
            }) as Arc<dyn SyncChildren<ConfigMap>>
        })
        .collect();
    let inner_log = log.clone();
    let inner = crate::controller::reconciler_fn(move |_key, _obj: Option<Arc<ConfigMap>>| {
        inner_log.lock().push("reconcile");
        async move {
            match reconcile_fails {
                true => Err(ReconcileError::transient("reconcile failed")),
                false => Ok(Action::Done),
            }
        }
    });
    let with_children = WithChildren {
        controller: "ctl".into(),
        validate,
        finalizer: None,
        children,
        inner,
    };
    let key = ObjectKey::new(Some("default"), "app");
    let result = with_children.reconcile(&key, object.map(Arc::new)).await;
    let log = log.lock().clone();
    (log, result)
}

#[tokio::test]
async fn the_declared_status_is_written_after_a_reconcile_that_succeeded() {
    let steps = [("status", false, true), ("secrets", false, false)];
    let (log, result) = run_steps(&steps, false).await;
    assert_eq!(log, ["secrets", "reconcile", "status"]);
    assert_eq!(result.unwrap(), Action::Done);
}

#[tokio::test]
async fn the_declared_status_is_not_written_after_a_failed_reconcile() {
    let steps = [("secrets", false, false), ("status", false, true)];
    let (log, result) = run_steps(&steps, true).await;
    assert_eq!(log, ["secrets", "reconcile"]);
    assert!(result.unwrap_err().to_string().contains("reconcile failed"));
}

/// A terminal error is not retried: kept over a later child type's transient failure, it
/// would leave that failure waiting for the parent's next change.
#[tokio::test]
async fn a_transient_failure_of_a_later_child_type_wins_over_a_terminal_one() {
    let steps = [
        ("terminal-maps", true, false),
        ("secrets", true, false),
        ("status", false, true),
    ];
    let (log, result) = run_steps(&steps, false).await;
    assert_eq!(log, ["terminal-maps", "secrets"]);
    let error = result.unwrap_err();
    assert!(!error.is_terminal(), "{error}");
    assert!(error.to_string().contains("secrets"), "{error}");
}

#[tokio::test]
async fn every_child_type_is_applied_and_the_first_failure_in_declaration_order_is_the_error() {
    let steps = [
        ("secrets", true, false),
        ("services", true, false),
        ("maps", false, false),
        ("status", false, true),
    ];
    let (log, result) = run_steps(&steps, false).await;
    assert_eq!(
        log,
        ["secrets", "services", "maps"],
        "no reconcile, no status"
    );
    let error = result.unwrap_err().to_string();
    assert!(
        error.contains("secrets") && !error.contains("services"),
        "{error}"
    );
}

#[tokio::test]
async fn an_object_validate_refuses_gets_no_child_reconcile_or_status() {
    let steps = [("secrets", false, false), ("status", false, true)];
    let refuse: ValidateFn<ConfigMap> =
        Arc::new(|_cm: &ConfigMap| Err(ReconcileError::terminal("no mode")));
    let (log, result) = run_validated_steps(
        &steps,
        false,
        Some(refuse.clone()),
        Some(ConfigMap::default()),
    )
    .await;
    assert!(log.is_empty(), "{log:?}");
    let error = result.unwrap_err();
    assert!(
        error.is_terminal() && error.to_string() == "no mode",
        "{error}"
    );
    // An object being deleted, or gone, is not validated: its cleanup goes on.
    let mut deleting = ConfigMap::default();
    deleting.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()),
    );
    for object in [Some(deleting), None] {
        let (log, result) = run_validated_steps(&steps, false, Some(refuse.clone()), object).await;
        assert_eq!(log, ["secrets", "reconcile", "status"]);
        assert!(result.is_ok());
    }
}

/// A finalizer whose API server is scripted: `live` answers `server`'s object.
struct ScriptedFinalizer {
    server: Option<ConfigMap>,
    log: Arc<parking_lot::Mutex<Vec<&'static str>>>,
}

const FINALIZER: &str = "example.com/cleanup";

#[async_trait::async_trait]
impl OwnFinalizer<ConfigMap> for ScriptedFinalizer {
    fn name(&self) -> &str {
        FINALIZER
    }

    async fn add(
        &self,
        _key: &ObjectKey,
        object: Arc<ConfigMap>,
    ) -> Result<Option<Arc<ConfigMap>>, ReconcileError> {
        self.log.lock().push("add");
        let mut added = (*object).clone();
        added.metadata.finalizers = Some(vec![FINALIZER.into()]);
        Ok(Some(Arc::new(added)))
    }

    async fn remove(&self, _key: &ObjectKey, _object: &ConfigMap) -> Result<(), ReconcileError> {
        self.log.lock().push("remove");
        Ok(())
    }

    async fn live(
        &self,
        _key: &ObjectKey,
        _object: &ConfigMap,
    ) -> Result<Option<Arc<ConfigMap>>, ReconcileError> {
        self.log.lock().push("live");
        Ok(self.server.clone().map(Arc::new))
    }
}

/// A ConfigMap, with the finalizer or not, being deleted or not.
fn config_map(finalizer: bool, deleting: bool) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("app".into());
    cm.metadata.uid = Some("u1".into());
    if finalizer {
        cm.metadata.finalizers = Some(vec![FINALIZER.into()]);
    }
    if deleting {
        cm.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ));
    }
    cm
}

/// What a controller with the finalizer does when the cache holds `cached` and the API
/// server `server`; the cleanup answers `cleaned`.
async fn run_finalized(
    cached: ConfigMap,
    server: Option<ConfigMap>,
    cleaned: Action,
) -> (Vec<&'static str>, Action) {
    let log = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let (reconciled, cleaning) = (log.clone(), log.clone());
    let inner = crate::controller::reconciler_fn(move |_key, obj: Option<Arc<ConfigMap>>| {
        let deleting = obj.is_some_and(|o| o.metadata.deletion_timestamp.is_some());
        reconciled.lock().push(if deleting {
            "reconcile deleting"
        } else {
            "reconcile"
        });
        async { Ok::<_, ReconcileError>(Action::Done) }
    })
    .cleanup(move |_key, _obj: Arc<ConfigMap>| {
        cleaning.lock().push("cleanup");
        async move { Ok(cleaned) }
    });
    let with_children = WithChildren {
        controller: "ctl".into(),
        validate: None,
        finalizer: Some(Arc::new(ScriptedFinalizer {
            server,
            log: log.clone(),
        }) as Arc<dyn OwnFinalizer<ConfigMap>>),
        children: Vec::new(),
        inner,
    };
    let key = ObjectKey::new(Some("default"), "app");
    let action = with_children
        .reconcile(&key, Some(Arc::new(cached)))
        .await
        .unwrap();
    let log = log.lock().clone();
    (log, action)
}

#[tokio::test]
async fn a_live_object_without_the_finalizer_gets_it_without_a_read() {
    let (log, _) = run_finalized(config_map(false, false), None, Action::Done).await;
    assert_eq!(log, ["add", "reconcile"]);
}

#[tokio::test]
async fn a_cached_object_with_the_finalizer_is_read_live_and_reconciled() {
    let live = config_map(true, false);
    let (log, _) = run_finalized(config_map(true, false), Some(live), Action::Done).await;
    assert_eq!(log, ["live", "reconcile"]);
}

#[tokio::test]
async fn an_object_gone_from_the_server_but_cached_with_the_finalizer_is_left_alone() {
    let (log, action) = run_finalized(config_map(true, false), None, Action::Done).await;
    assert_eq!(
        log,
        ["live"],
        "no reconcile for an object the server no longer has"
    );
    assert_eq!(action, Action::Done);
}

#[tokio::test]
async fn an_object_the_server_is_deleting_is_cleaned_up_though_the_cache_says_it_lives() {
    let live = config_map(true, true);
    let (log, _) = run_finalized(config_map(true, false), Some(live), Action::Done).await;
    assert_eq!(log, ["live", "cleanup", "remove"]);
}

#[tokio::test]
async fn an_object_being_deleted_whose_finalizer_was_removed_by_hand_is_reconciled_as_without_one()
{
    let live = config_map(false, true);
    let (log, _) = run_finalized(config_map(true, false), Some(live), Action::Done).await;
    assert_eq!(
        log,
        ["live", "reconcile deleting"],
        "no add on an object being deleted"
    );
}

#[tokio::test]
async fn a_cleanup_that_is_not_done_keeps_the_finalizer() {
    let delay = Action::RequeueAfter(std::time::Duration::from_secs(5));
    let (log, action) = run_finalized(config_map(true, true), None, delay).await;
    assert_eq!(
        log,
        ["cleanup"],
        "no removal, and no read for an object being deleted"
    );
    assert_eq!(action, delay);
    let (log, _) = run_finalized(config_map(true, true), None, Action::Requeue).await;
    assert_eq!(log, ["cleanup"]);
}
