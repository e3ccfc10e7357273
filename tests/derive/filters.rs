//! `filter = f` inside `owns(...)`: which changes of an owned child queue its parent
//! (controller-runtime's `Owns(&X{}, builder.WithPredicates(...))`), through a real
//! `kube::Client` against the in-process API server.

use std::time::Duration;

use informer::prelude::*;
use informer_testing::TestApiServer;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use tokio::sync::mpsc;

use crate::servers::next;

/// Updates of a ConfigMap pass only when its data changed (adds and deletes pass).
fn data_changed() -> Filter<ConfigMap> {
    Filter::new(|n: &Notification<ConfigMap>| match n {
        Notification::Update { old, new } => old.data != new.data,
        Notification::Add { .. } | Notification::Delete(_) => true,
    })
}

/// What a reconcile saw: the key, and the labels of the owned ConfigMap in the cache.
#[derive(Debug, PartialEq)]
struct Seen {
    key: String,
    child_labels: Vec<String>,
}

#[derive(ControllerSpec)]
#[controller(for = Secret, owns(ConfigMap, filter = data_changed))]
struct DataWatcher {
    seen: mpsc::UnboundedSender<Seen>,
}

impl Reconcile for DataWatcher {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        _secret: Option<Arc<Secret>>,
    ) -> Result<Action, ReconcileError> {
        let child_labels = ctx
            .config_maps()
            .list()
            .iter()
            .flat_map(|cm| cm.labels().keys().cloned().collect::<Vec<_>>())
            .collect();
        let _ = self.seen.send(Seen {
            key: key.to_string(),
            child_labels,
        });
        Ok(Action::Done)
    }
}

#[tokio::test]
async fn an_owned_childs_change_queues_its_parent_only_if_the_filter_passes() {
    let server = TestApiServer::start().await.unwrap();
    let client = server.client();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(DataWatcher { seen: tx }.run_until(client.clone(), cancel.clone()));

    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let mut secret = Secret::default();
    secret.metadata.name = Some("db".into());
    let owner = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    assert_eq!(
        next(&mut rx, "the new Secret's reconcile").await.key,
        "default/db"
    );

    // An owned ConfigMap arrives: adds pass the filter.
    let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("db-settings".into());
    cm.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Secret".into(),
        name: owner.name_any(),
        uid: owner.uid().unwrap(),
        controller: Some(true),
        ..Default::default()
    }]);
    cm.data = Some([("size".to_owned(), "1".to_owned())].into());
    config_maps
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    assert_eq!(
        next(&mut rx, "the owner's reconcile of the new child").await,
        Seen {
            key: "default/db".into(),
            child_labels: vec![],
        }
    );

    // Its labels change, not its data: the filter rejects it, the parent is not queued.
    let labels = Patch::Merge(json!({"metadata": {"labels": {"tier": "cache"}}}));
    config_maps
        .patch("db-settings", &PatchParams::default(), &labels)
        .await
        .unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(500), rx.recv())
            .await
            .is_err(),
        "a change the filter rejects does not reconcile the owner"
    );

    // Its data changes: the filter passes it, the parent is reconciled. The rejected change
    // is in the cache all the same (a filter of enqueueing, not of the cache).
    let data = Patch::Merge(json!({"data": {"size": "2"}}));
    config_maps
        .patch("db-settings", &PatchParams::default(), &data)
        .await
        .unwrap();
    assert_eq!(
        next(&mut rx, "the owner's reconcile of the data change").await,
        Seen {
            key: "default/db".into(),
            child_labels: vec!["tier".into()],
        }
    );

    cancel.cancel();
    run.await.unwrap().unwrap();
}
