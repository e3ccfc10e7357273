//! The controller's own finalizer (`ControllerBuilder::finalizer`) through a real
//! `kube::Client` against the in-process API server: on the object before anything is written
//! for it, the cleanup run instead of the reconcile once the object is being deleted, after
//! its children in other namespaces are gone, and the finalizer removed only when the cleanup
//! says it is done.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use super::children::{parent, stall_parent_cache};
use super::support::{create_namespace, eventually_async, server};
use informer_runtime::controller::{
    Action, BuildError, Controller, ReconcileError, WatchOptions, reconciler_fn,
};
use informer_runtime::factory::InformerFactory;
use informer_runtime::informer::CancellationToken;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use parking_lot::Mutex;
use tokio::task::JoinHandle;

const FINALIZER: &str = "example.com/outside-copy";

/// What the controller under test was asked: each reconcile's object (with whether it was
/// being deleted), each cleanup's, in order.
#[derive(Default)]
struct Calls(Mutex<Vec<String>>);

impl Calls {
    fn push(&self, call: String) {
        self.0.lock().push(call);
    }
    fn all(&self) -> Vec<String> {
        self.0.lock().clone()
    }
    fn count(&self, call: &str) -> usize {
        self.0.lock().iter().filter(|c| *c == call).count()
    }
}

/// A Secret child in the parent's namespace, and a copy in namespace `mirror`.
fn secret_for(cm: &ConfigMap) -> Option<Secret> {
    let mut secret = Secret::default();
    secret.metadata.name = Some(format!("{}-secret", cm.name_any()));
    Some(secret)
}

fn copy_for(cm: &ConfigMap) -> Option<ConfigMap> {
    let mut copy = ConfigMap::default();
    copy.metadata.name = Some(format!("default.{}", cm.name_any()));
    copy.metadata.namespace = Some("mirror".into());
    copy.data = cm.data.clone();
    Some(copy)
}

/// How the cleanup under test answers its `n`th call (from 0).
type Answer = Arc<dyn Fn(usize) -> Result<Action, ReconcileError> + Send + Sync>;

fn done() -> Answer {
    Arc::new(|_| Ok(Action::Done))
}

/// A controller of parents in `default` with the finalizer, a Secret child beside each and a
/// copy in `mirror`, recording its calls; `valid` parents are those without `invalid` in
/// their data.
fn run_controller(
    client: Client,
    calls: Arc<Calls>,
    answer: Answer,
) -> (CancellationToken, JoinHandle<()>) {
    let copies = Api::<ConfigMap>::namespaced(client.clone(), "mirror");
    let factory = InformerFactory::new(client);
    let reconciled = calls.clone();
    let cleanups = AtomicUsize::new(0);
    let controller = Controller::<ConfigMap>::builder(&factory)
        .name("copier")
        .namespace("default")
        .label_selector("role=parent")
        .finalizer(FINALIZER)
        .validate(
            |cm: &ConfigMap| match cm.data.iter().flatten().any(|(k, _)| k == "invalid") {
                true => Err(ReconcileError::terminal("invalid")),
                false => Ok(()),
            },
        )
        .children(secret_for)
        .children_with(copy_for, WatchOptions::new().namespace("mirror"))
        .build(
            reconciler_fn(move |key, cm: Option<Arc<ConfigMap>>| {
                let calls = reconciled.clone();
                async move {
                    let state = match &cm {
                        None => "gone",
                        Some(cm) if cm.metadata.deletion_timestamp.is_some() => "deleting",
                        Some(cm) if cm.finalizers().iter().any(|f| f == FINALIZER) => "live",
                        Some(_) => "live without the finalizer",
                    };
                    calls.push(format!("reconcile {} {state}", key.name()));
                    Ok::<_, ReconcileError>(Action::Done)
                }
            })
            .cleanup(move |key, cm: Arc<ConfigMap>| {
                let n = cleanups.fetch_add(1, Ordering::SeqCst);
                let (calls, answer, copies) = (calls.clone(), answer.clone(), copies.clone());
                async move {
                    assert!(cm.metadata.deletion_timestamp.is_some());
                    let copy = copies.get_opt(&format!("default.{}", key.name())).await;
                    let copy = if copy.unwrap().is_some() {
                        " (its copy still there)"
                    } else {
                        ""
                    };
                    calls.push(format!("cleanup {}{copy}", key.name()));
                    answer(n)
                }
            }),
        )
        .unwrap();
    let cancel = CancellationToken::new();
    (cancel.clone(), tokio::spawn(controller.run(cancel)))
}

async fn started() -> (
    informer_testing::TestApiServer,
    Api<ConfigMap>,
    Api<ConfigMap>,
) {
    let server = server().await;
    let client = server.client();
    create_namespace(&client, "mirror").await;
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let copies = Api::<ConfigMap>::namespaced(client, "mirror");
    (server, parents, copies)
}

/// Creates parent "app" and waits until the controller copied it (it has the finalizer).
async fn made(parents: &Api<ConfigMap>, copies: &Api<ConfigMap>) {
    create(parents, "app", &[("k", "v")]).await;
    eventually_async("the copy exists", async || {
        copies.get_opt("default.app").await.unwrap().is_some()
    })
    .await;
}

/// Creates parent `name` in `default` with `data`.
async fn create(parents: &Api<ConfigMap>, name: &str, data: &[(&str, &str)]) {
    parents
        .create(&PostParams::default(), &parent("default", name, data))
        .await
        .unwrap();
}

async fn delete(parents: &Api<ConfigMap>, name: &str) {
    parents
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
}

async fn until_gone(api: &Api<ConfigMap>, name: &str, what: &str) {
    eventually_async(what, async || api.get_opt(name).await.unwrap().is_none()).await;
}

#[tokio::test]
async fn the_finalizer_is_on_the_parent_before_its_first_child_is_written() {
    let (server, parents, copies) = started().await;
    let calls = Arc::new(Calls::default());
    let (cancel, run) = run_controller(server.client(), calls.clone(), done());
    made(&parents, &copies).await;
    let stored = parents.get("app").await.unwrap();
    assert_eq!(stored.finalizers(), [FINALIZER]);
    let secret = Api::<Secret>::namespaced(server.client(), "default")
        .get("app-secret")
        .await
        .unwrap();
    let copy = copies.get("default.app").await.unwrap();
    let version = |v: Option<String>| v.unwrap().parse::<u64>().unwrap();
    // Nothing else writes the parent: its version is the finalizer's write.
    let finalizer_written = version(stored.metadata.resource_version);
    assert!(finalizer_written < version(secret.metadata.resource_version));
    assert!(finalizer_written < version(copy.metadata.resource_version));
    assert!(
        calls.all().iter().all(|c| c == "reconcile app live"),
        "the reconcile saw the object with its finalizer: {:?}",
        calls.all()
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn an_object_validate_refuses_gets_no_finalizer() {
    let (server, parents, _copies) = started().await;
    let calls = Arc::new(Calls::default());
    let (cancel, run) = run_controller(server.client(), calls.clone(), done());
    create(&parents, "bad", &[("invalid", "")]).await;
    create(&parents, "good", &[("k", "v")]).await;
    eventually_async("the valid parent has the finalizer", async || {
        !parents.get("good").await.unwrap().finalizers().is_empty()
    })
    .await;
    assert!(parents.get("bad").await.unwrap().finalizers().is_empty());
    // Nothing holds it: it goes at once.
    delete(&parents, "bad").await;
    assert!(parents.get_opt("bad").await.unwrap().is_none());
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_deleted_parent_is_cleaned_up_instead_of_reconciled_then_loses_the_finalizer_and_goes() {
    let (server, parents, copies) = started().await;
    let calls = Arc::new(Calls::default());
    let (cancel, run) = run_controller(server.client(), calls.clone(), done());
    made(&parents, &copies).await;
    delete(&parents, "app").await;
    until_gone(&parents, "app", "the parent goes once cleaned up").await;
    assert!(
        copies.get_opt("default.app").await.unwrap().is_none(),
        "its copy in another namespace went before it"
    );
    eventually_async("the deletion is reconciled", async || {
        calls.count("reconcile app gone") == 1
    })
    .await;
    assert_eq!(
        calls.count("cleanup app"),
        1,
        "once, after its copy in another namespace went: {:?}",
        calls.all()
    );
    assert_eq!(
        calls.count("reconcile app deleting"),
        0,
        "{:?}",
        calls.all()
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_parent_deleted_while_the_controller_was_down_waits_for_it_and_is_cleaned_up_at_start() {
    let (server, parents, copies) = started().await;
    let calls = Arc::new(Calls::default());
    let (cancel, run) = run_controller(server.client(), calls.clone(), done());
    made(&parents, &copies).await;
    cancel.cancel();
    run.await.unwrap();

    // Down: the deletion waits for the controller, the copy is still there.
    delete(&parents, "app").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(parents.get_opt("app").await.unwrap().is_some());
    assert!(copies.get_opt("default.app").await.unwrap().is_some());

    let calls = Arc::new(Calls::default());
    let (cancel, run) = run_controller(server.client(), calls.clone(), done());
    until_gone(
        &parents,
        "app",
        "the parent deleted while the controller was down goes",
    )
    .await;
    assert!(copies.get_opt("default.app").await.unwrap().is_none());
    assert_eq!(calls.count("cleanup app"), 1, "{:?}", calls.all());
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_cleanup_that_asks_to_run_again_keeps_the_finalizer_until_it_answers_done() {
    // Not done (after a delay, then after the backoff, in turns) until the test says so.
    let finished = Arc::new(AtomicBool::new(false));
    let answer: Answer = {
        let finished = finished.clone();
        Arc::new(move |n| {
            Ok(match (finished.load(Ordering::SeqCst), n % 2) {
                (true, _) => Action::Done,
                (false, 0) => Action::RequeueAfter(Duration::from_millis(20)),
                (false, _) => Action::Requeue,
            })
        })
    };
    let (server, parents, copies) = started().await;
    let calls = Arc::new(Calls::default());
    let (cancel, run) = run_controller(server.client(), calls.clone(), answer);
    made(&parents, &copies).await;
    delete(&parents, "app").await;
    eventually_async("the cleanup ran four times", async || {
        calls.count("cleanup app") >= 4
    })
    .await;
    let held = parents.get("app").await.unwrap();
    assert_eq!(
        held.finalizers(),
        [FINALIZER],
        "not done: the finalizer stays"
    );
    finished.store(true, Ordering::SeqCst);
    until_gone(&parents, "app", "the cleanup's Done lets it go").await;
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_failing_cleanup_keeps_the_finalizer_and_is_retried() {
    let fails_once: Answer = Arc::new(|n| match n {
        0 => Err(ReconcileError::transient("the outside store is down")),
        _ => Ok(Action::Done),
    });
    let (server, parents, copies) = started().await;
    let calls = Arc::new(Calls::default());
    let (cancel, run) = run_controller(server.client(), calls.clone(), fails_once);
    made(&parents, &copies).await;
    delete(&parents, "app").await;
    until_gone(&parents, "app", "the retried cleanup lets it go").await;
    assert_eq!(calls.count("cleanup app"), 2, "{:?}", calls.all());
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_parent_gone_from_the_server_but_still_cached_with_the_finalizer_is_not_reconciled() {
    // A cache that went back in time (a restart against a lagging API server) holds a
    // parent whose cleanup ran and which is gone: an outside write made for it would never
    // be cleaned up. The controller reads such a parent live before its children and
    // reconcile.
    let (server, parents, copies) = started().await;
    let calls = Arc::new(Calls::default());
    let (cancel, run) = run_controller(server.client(), calls.clone(), done());
    made(&parents, &copies).await;
    let faults = stall_parent_cache(&server);
    let merge = |patch| Patch::Merge(patch);
    parents
        .patch(
            "app",
            &PatchParams::default(),
            &merge(serde_json::json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    delete(&parents, "app").await;
    let reconciled = calls.count("reconcile app live");
    // Its copy changes: the parent the cache still holds, live with the finalizer, is
    // reconciled.
    copies
        .patch(
            "default.app",
            &PatchParams::default(),
            &merge(serde_json::json!({"data": {"k": "edited"}})),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        calls.count("reconcile app live"),
        reconciled,
        "{:?}",
        calls.all()
    );
    let copy = copies.get("default.app").await.unwrap();
    assert_eq!(
        copy.data.unwrap()["k"],
        "edited",
        "nothing was written for a parent the server no longer has"
    );
    faults.clear();
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_finalizer_that_is_not_domain_qualified_is_a_build_error() {
    let server = server().await;
    let factory = InformerFactory::new(server.client());
    for (name, says) in [
        (
            "cleanup",
            "write a domain-qualified name such as \"example.com/cleanup\"",
        ),
        ("Example.com/cleanup", "is not a qualified name"),
        ("example.com/", "is not a qualified name"),
        ("example.com/-x", "is not a qualified name"),
    ] {
        let built = Controller::<ConfigMap>::builder(&factory)
            .finalizer(name)
            .build_children_only();
        let Err(error @ BuildError::Finalizer { .. }) = built else {
            panic!("{name} was accepted");
        };
        assert!(error.to_string().contains(says), "{name}: {error}");
    }
    assert!(
        Controller::<ConfigMap>::builder(&factory)
            .finalizer("example.com/clean_up.v2")
            .build_children_only()
            .is_ok()
    );
}
