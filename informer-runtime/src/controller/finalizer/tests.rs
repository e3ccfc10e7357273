//! The finalizer helper against the in-process API server.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use informer_testing::TestApiServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, ResourceExt};

use super::*;

const NAME: &str = "example.com/cleanup";

async fn setup(finalizers: &[&str]) -> (TestApiServer, Api<ConfigMap>, Arc<ConfigMap>) {
    let server = TestApiServer::start()
        .await
        .expect("the test server starts");
    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("app".into());
    if !finalizers.is_empty() {
        cm.metadata.finalizers = Some(finalizers.iter().map(|f| f.to_string()).collect());
    }
    let created = api.create(&PostParams::default(), &cm).await.unwrap();
    (server, api, Arc::new(created))
}

/// Marks `cm` deleted on the server (its finalizers keep it) and returns it as stored.
async fn deleting(api: &Api<ConfigMap>) -> Arc<ConfigMap> {
    let _ = api.delete("app", &DeleteParams::default()).await.unwrap();
    let cm = api.get("app").await.unwrap();
    assert!(cm.metadata.deletion_timestamp.is_some());
    Arc::new(cm)
}

/// What `finalizer` asked of the reconcile: `"apply"` or `"cleanup"`, with the object's
/// finalizers as the reconcile saw them.
async fn run(
    api: &Api<ConfigMap>,
    cm: Arc<ConfigMap>,
    result: Result<Action, ReconcileError>,
) -> (
    Result<Action, ReconcileError>,
    Vec<(&'static str, Vec<String>)>,
) {
    let mut seen = Vec::new();
    let out = finalizer(api, NAME, cm, async |event| {
        match event {
            FinalizerEvent::Apply(cm) => seen.push(("apply", cm.finalizers().to_vec())),
            FinalizerEvent::Cleanup(cm) => seen.push(("cleanup", cm.finalizers().to_vec())),
        }
        result
    })
    .await;
    (out, seen)
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn a_live_object_gets_the_finalizer_and_is_applied_in_the_same_call() {
    let (_server, api, cm) = setup(&[]).await;
    let (out, seen) = run(&api, cm, Ok(Action::Done)).await;
    assert_eq!(out.unwrap(), Action::Done);
    assert_eq!(seen, [("apply", strings(&[NAME]))], "the patched object");
    assert_eq!(api.get("app").await.unwrap().finalizers(), [NAME]);
}

#[tokio::test]
async fn the_finalizer_is_added_after_the_others_and_keeps_them() {
    let (_server, api, cm) = setup(&["other.io/keep"]).await;
    let (out, _) = run(&api, cm, Ok(Action::Done)).await;
    out.unwrap();
    assert_eq!(
        api.get("app").await.unwrap().finalizers(),
        ["other.io/keep", NAME]
    );
}

#[tokio::test]
async fn a_live_object_with_the_finalizer_is_applied_without_a_write() {
    let (_server, api, cm) = setup(&[NAME]).await;
    let rv = cm.resource_version();
    let (out, seen) = run(
        &api,
        cm,
        Ok(Action::RequeueAfter(std::time::Duration::from_secs(5))),
    )
    .await;
    assert_eq!(
        out.unwrap(),
        Action::RequeueAfter(std::time::Duration::from_secs(5)),
        "the reconcile's action"
    );
    assert_eq!(seen, [("apply", strings(&[NAME]))]);
    assert_eq!(api.get("app").await.unwrap().resource_version(), rv);
}

#[tokio::test]
async fn a_deleted_object_is_cleaned_up_then_its_finalizer_removed_and_it_goes() {
    let (_server, api, _) = setup(&[NAME]).await;
    let cm = deleting(&api).await;
    let (out, seen) = run(&api, cm, Ok(Action::Done)).await;
    assert_eq!(out.unwrap(), Action::Done);
    assert_eq!(seen, [("cleanup", strings(&[NAME]))]);
    assert!(api.get_opt("app").await.unwrap().is_none(), "deleted");
}

#[tokio::test]
async fn only_our_finalizer_is_removed() {
    let (_server, api, _) = setup(&["other.io/first", NAME, "other.io/last"]).await;
    let cm = deleting(&api).await;
    let (out, _) = run(&api, cm, Ok(Action::Done)).await;
    out.unwrap();
    assert_eq!(
        api.get("app").await.unwrap().finalizers(),
        ["other.io/first", "other.io/last"]
    );
}

#[tokio::test]
async fn a_failing_cleanup_keeps_the_finalizer() {
    let (_server, api, _) = setup(&[NAME]).await;
    let cm = deleting(&api).await;
    let (out, _) = run(&api, cm, Err(ReconcileError::transient("bucket busy"))).await;
    assert_eq!(out.unwrap_err().to_string(), "bucket busy");
    assert_eq!(api.get("app").await.unwrap().finalizers(), [NAME]);
}

#[tokio::test]
async fn a_deleted_object_without_the_finalizer_is_left_alone() {
    let (_server, api, _) = setup(&["other.io/keep"]).await;
    let cm = deleting(&api).await;
    let calls = AtomicUsize::new(0);
    let out = finalizer(&api, NAME, cm, async |_| {
        calls.fetch_add(1, Ordering::Relaxed);
        Ok(Action::Done)
    })
    .await;
    assert_eq!(out.unwrap(), Action::Done);
    assert_eq!(calls.load(Ordering::Relaxed), 0, "no reconcile");
    assert_eq!(
        api.get("app").await.unwrap().finalizers(),
        ["other.io/keep"]
    );
}

#[tokio::test]
async fn finalizers_changed_since_the_cache_read_fail_the_add_instead_of_losing_one() {
    let (_server, api, stale) = setup(&["other.io/a"]).await;
    // Someone else changes the finalizers after our cache read `stale`.
    let mut changed = (*stale).clone();
    changed.metadata.finalizers = Some(strings(&["other.io/a", "other.io/b"]));
    api.replace("app", &PostParams::default(), &changed)
        .await
        .unwrap();
    let (out, seen) = run(&api, stale, Ok(Action::Done)).await;
    let error = out.expect_err("the test of the finalizers failed");
    // The error says what failed, where, and keeps the API's error as its source.
    let message = error.to_string();
    assert!(
        message.starts_with("adding finalizer ") && message.contains(" on ConfigMap "),
        "{message}"
    );
    assert!(!error.is_terminal(), "retried");
    assert!(
        std::error::Error::source(error.as_error())
            .is_some_and(|s| s.downcast_ref::<kube::Error>().is_some()),
        "{error:?}"
    );
    assert!(seen.is_empty(), "no reconcile on a failed add");
    assert_eq!(
        api.get("app").await.unwrap().finalizers(),
        ["other.io/a", "other.io/b"]
    );
}

#[tokio::test]
async fn an_object_gone_before_its_finalizer_is_added_is_done() {
    let (_server, api, cm) = setup(&[]).await;
    api.delete("app", &DeleteParams::default()).await.unwrap();
    let (out, seen) = run(&api, cm, Ok(Action::Done)).await;
    assert_eq!(out.unwrap(), Action::Done);
    assert!(seen.is_empty());
}

#[tokio::test]
async fn a_cache_behind_the_server_that_already_has_our_finalizer_applies_with_the_live_object() {
    // The server has the finalizer; the cached copy is from before it was added.
    let (_server, api, cached) = setup(&[]).await;
    let mut with = (*cached).clone();
    with.metadata.finalizers = Some(strings(&[NAME]));
    with.metadata.resource_version = None;
    api.replace("app", &PostParams::default(), &with)
        .await
        .unwrap();
    let (out, seen) = run(&api, cached, Ok(Action::Done)).await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(seen, [("apply", strings(&[NAME]))]);
}

/// Sets the stored object's finalizers (a client other than the helper).
async fn set_finalizers(api: &Api<ConfigMap>, finalizers: &[&str]) {
    let mut cm = api.get("app").await.unwrap();
    cm.metadata.finalizers = Some(strings(finalizers));
    api.replace("app", &PostParams::default(), &cm)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_late_cleanup_leaves_the_finalizer_of_an_object_made_again_under_its_name() {
    let (_server, api, _) = setup(&[NAME]).await;
    let stale = deleting(&api).await;
    // The object goes, and another is made under its name, before the cache catches up.
    set_finalizers(&api, &[]).await;
    let mut again = ConfigMap::default();
    again.metadata.name = Some("app".into());
    again.metadata.finalizers = Some(strings(&[NAME]));
    let again = api.create(&PostParams::default(), &again).await.unwrap();
    let (out, seen) = run(&api, stale, Ok(Action::Done)).await;
    assert_eq!(out.unwrap(), Action::Done, "nothing is left to remove");
    assert_eq!(seen, [("cleanup", strings(&[NAME]))]);
    let live = api.get("app").await.unwrap();
    assert_eq!(live.uid(), again.uid());
    assert_eq!(
        live.finalizers(),
        [NAME],
        "the new object's cleanup has not run"
    );
}

#[tokio::test]
async fn a_finalizer_someone_removed_since_the_cache_read_is_done() {
    let (_server, api, _) = setup(&[NAME, "other.io/keep"]).await;
    let stale = deleting(&api).await;
    set_finalizers(&api, &["other.io/keep"]).await;
    let (out, _) = run(&api, stale, Ok(Action::Done)).await;
    assert_eq!(out.unwrap(), Action::Done);
    assert_eq!(
        api.get("app").await.unwrap().finalizers(),
        ["other.io/keep"]
    );
}

#[tokio::test]
async fn a_finalizer_moved_since_the_cache_read_is_removed_where_it_is_now() {
    let (_server, api, _) = setup(&["other.io/first", NAME, "other.io/last"]).await;
    let stale = deleting(&api).await;
    set_finalizers(&api, &[NAME, "other.io/last"]).await;
    let (out, _) = run(&api, stale, Ok(Action::Done)).await;
    assert_eq!(out.unwrap(), Action::Done);
    assert_eq!(
        api.get("app").await.unwrap().finalizers(),
        ["other.io/last"]
    );
}

#[tokio::test]
async fn an_object_gone_before_its_finalizer_is_removed_is_done() {
    let (_server, api, _) = setup(&[NAME]).await;
    let stale = deleting(&api).await;
    set_finalizers(&api, &[]).await;
    let (out, seen) = run(&api, stale, Ok(Action::Done)).await;
    assert_eq!(out.unwrap(), Action::Done);
    assert_eq!(seen.len(), 1, "the cleanup ran");
    assert!(api.get_opt("app").await.unwrap().is_none());
}

/// A ConfigMap read as a type that drops `metadata.finalizers` (as a view without them in
/// its `metadata(...)` does).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Blind {
    #[serde(deserialize_with = "without_finalizers")]
    metadata: kube::core::ObjectMeta,
}

fn without_finalizers<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<kube::core::ObjectMeta, D::Error> {
    let mut meta = <kube::core::ObjectMeta as serde::Deserialize>::deserialize(d)?;
    meta.finalizers = None;
    Ok(meta)
}

impl kube::Resource for Blind {
    type DynamicType = ();
    type Scope = kube::core::NamespaceResourceScope;
    fn kind(_: &()) -> std::borrow::Cow<'_, str> {
        "ConfigMap".into()
    }
    fn group(_: &()) -> std::borrow::Cow<'_, str> {
        "".into()
    }
    fn version(_: &()) -> std::borrow::Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> std::borrow::Cow<'_, str> {
        "configmaps".into()
    }
    fn meta(&self) -> &kube::core::ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut kube::core::ObjectMeta {
        &mut self.metadata
    }
}

#[tokio::test]
async fn a_type_that_does_not_keep_finalizers_fails_terminally_saying_so() {
    let (server, _api, _cached) = setup(&[]).await;
    let blind = Api::<Blind>::namespaced(server.client(), "default");
    let read = Arc::new(blind.get("app").await.unwrap());
    // The first add goes through; the next reconcile cannot see it.
    let first = finalizer(&blind, NAME, read.clone(), async |_| Ok(Action::Done)).await;
    assert!(first.is_ok(), "{first:?}");
    let read = Arc::new(blind.get("app").await.unwrap());
    let second = finalizer(&blind, NAME, read, async |_| Ok(Action::Done)).await;
    let error = second.unwrap_err();
    assert!(error.is_terminal(), "{error}");
    assert!(
        error
            .to_string()
            .contains("keep finalizers and deletion_timestamp"),
        "{error}"
    );
}
