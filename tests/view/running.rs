//! Views through a real `kube::Client` against the in-process API server: an informer of
//! views, and a derived controller whose primary resource is a view.

use std::sync::Arc;
use std::time::Duration;

use informer::prelude::*;
use informer_testing::TestApiServer;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// The fields of a Pod the placement controller reads.
#[derive(Clone, Debug, View)]
#[view(of = Pod)]
struct PodView {
    metadata: ObjectMeta,
    spec: Option<PodSpecView>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct PodSpecView {
    node_name: Option<String>,
}

fn pod(name: &str, node: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            labels: Some([("app".to_owned(), "web".to_owned())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: Some(node.into()),
            containers: vec![Container {
                name: "app".into(),
                image: Some("web:1".into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn node_of(view: &PodView) -> Option<String> {
    view.spec.as_ref()?.node_name.clone()
}

async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

#[tokio::test]
async fn an_informer_of_views_lists_and_watches_the_full_types_endpoint() {
    let server = TestApiServer::start().await.unwrap();
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    pods.create(&PostParams::default(), &pod("a", "node-1"))
        .await
        .unwrap();
    let factory = InformerFactory::new(server.client()).drop_managed_fields(true);
    let views = factory.informer::<PodView>(InformerParams::namespaced("default"));
    factory.start();
    factory
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();
    let key = ObjectKey::new(Some("default"), "a");
    let cached = views.lister().get(&key).expect("listed");
    assert_eq!(node_of(&cached).as_deref(), Some("node-1"));
    assert_eq!(cached.metadata.labels.as_ref().unwrap()["app"], "web");
    assert!(cached.metadata.managed_fields.is_none());

    // A change arrives through the watch, as a view.
    let patch = serde_json::json!({"metadata": {"labels": {"app": "api"}}});
    pods.patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    pods.create(&PostParams::default(), &pod("b", "node-2"))
        .await
        .unwrap();
    eventually("the watched changes", || {
        views.lister().len() == 2
            && views
                .lister()
                .get(&key)
                .is_some_and(|v| v.metadata.labels.as_ref().unwrap()["app"] == "api")
    })
    .await;
    factory.shutdown().await;
}

/// Reports the node of every Pod it reconciles.
#[derive(ControllerSpec)]
#[controller(for = PodView)]
struct Placement {
    seen: mpsc::UnboundedSender<(String, Option<String>)>,
}

impl Reconcile for Placement {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        pod: Option<Arc<PodView>>,
    ) -> Result<Action, ReconcileError> {
        let cached = ctx.pod_views().get(key);
        assert_eq!(cached.is_some(), pod.is_some());
        let _ = self
            .seen
            .send((key.to_string(), pod.as_deref().and_then(node_of)));
        Ok(Action::Done)
    }
}

#[tokio::test]
async fn a_derived_controller_of_views_reconciles_what_the_server_holds() {
    let server = TestApiServer::start().await.unwrap();
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    pods.create(&PostParams::default(), &pod("a", "node-1"))
        .await
        .unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(Placement { seen: tx }.run_until(server.client(), cancel.clone()));
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("a reconcile within 30 s")
            .expect("the controller runs")
    };
    assert_eq!(
        next().await,
        ("default/a".to_owned(), Some("node-1".to_owned()))
    );
    pods.create(&PostParams::default(), &pod("b", "node-2"))
        .await
        .unwrap();
    assert_eq!(
        next().await,
        ("default/b".to_owned(), Some("node-2".to_owned()))
    );
    cancel.cancel();
    run.await.unwrap().unwrap();
}
