//! What a derived controller caches by default: compact caches (`ControllerSpec::CACHE_POLICY`),
//! through a real `kube::Client` against the in-process API server.

use std::sync::Arc;
use std::time::Duration;

use informer::prelude::*;
use informer::runtime::compact_store::DEFAULT_HOT_OBJECTS;
use informer_testing::TestApiServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use tokio::sync::mpsc;

/// Sends the lister, and the object it reconciled, of every key.
#[derive(ControllerSpec)]
#[controller(for = ConfigMap, namespace = "default")]
struct Recorder {
    seen: mpsc::UnboundedSender<(ObjectKey, Arc<ConfigMap>, Lister<ConfigMap>)>,
}

impl Reconcile for Recorder {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        cm: Option<Arc<ConfigMap>>,
    ) -> Result<Action, ReconcileError> {
        if let Some(cm) = cm {
            let _ = self.seen.send((key.clone(), cm, ctx.config_maps().clone()));
        }
        Ok(Action::Done)
    }
}

#[tokio::test]
async fn a_derived_controller_caches_compactly_by_default() {
    let server = TestApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let n = DEFAULT_HOT_OBJECTS + 50;
    for i in 0..n {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("cm-{i:04}"));
        cm.data = Some([("i".to_owned(), i.to_string())].into());
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(Recorder { seen: tx }.run_until(server.client(), cancel.clone()));
    let mut reconciled = std::collections::HashMap::new();
    let mut lister = None;
    while reconciled.len() < n {
        let (key, cm, l) = tokio::time::timeout(Duration::from_secs(60), rx.recv())
            .await
            .expect("every object reconciled within a minute")
            .expect("the controller runs");
        reconciled.insert(key, cm);
        lister = Some(l);
    }
    let lister = lister.unwrap();
    // Read back every object: equal to what was reconciled, but (for all but the hot ones)
    // decoded again from the compact cache rather than the allocation the reconcile got.
    let fresh = reconciled
        .iter()
        .filter(|(key, cm)| {
            let now = lister.get(key).expect("cached");
            assert_eq!(*now, ***cm);
            !Arc::ptr_eq(&now, cm)
        })
        .count();
    assert!(
        fresh >= n - DEFAULT_HOT_OBJECTS,
        "{fresh} of {n} objects were decoded again"
    );
    cancel.cancel();
    run.await.unwrap().unwrap();
}
