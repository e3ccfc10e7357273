//! `controller::finalizer` against both servers: its JSON patches (a `test` of absent
//! finalizers against `null`, of a changed list, an index removed) mean the same to the real
//! server's patch library as to the fake.

use std::sync::Arc;

use informer_runtime::controller::{Action, FinalizerEvent, finalizer};
use kube::ResourceExt;
use kube::api::{DeleteParams, PostParams};

use super::server::{Options, Server, create, on_both_servers};

const NAME: &str = "example.com/cleanup";

async fn finalizer_lifecycle(server: &Server) {
    let api = server.widgets();
    let created = create(&api, "w", &[], 1).await;
    // Live, without it: added, then applied with the patched object.
    let mut applied = Vec::new();
    let out = finalizer(&api, NAME, Arc::new(created), async |event| {
        if let FinalizerEvent::Apply(w) = event {
            applied.push(w.finalizers().to_vec());
        }
        Ok(Action::Done)
    })
    .await;
    assert_eq!(out.unwrap(), Action::Done, "{}", server.name());
    assert_eq!(applied, [vec![NAME.to_owned()]], "{}", server.name());

    // Someone adds another finalizer; a stale read cannot add ours twice or drop theirs.
    let mut current = api.get("w").await.unwrap();
    let stale = current.clone();
    current.metadata.finalizers = Some(vec![NAME.to_owned(), "other.io/keep".to_owned()]);
    api.replace("w", &PostParams::default(), &current)
        .await
        .unwrap();
    let mut stale_without_ours = stale.clone();
    stale_without_ours.metadata.finalizers = None;
    // The test of absent finalizers fails; the object, read again, has ours: the reconcile
    // goes on with it.
    let mut seen = Vec::new();
    let out = finalizer(&api, NAME, Arc::new(stale_without_ours), async |event| {
        if let FinalizerEvent::Apply(w) = event {
            seen.push(w.finalizers().to_vec());
        }
        Ok(Action::Done)
    })
    .await;
    assert_eq!(out.unwrap(), Action::Done, "{}", server.name());
    assert_eq!(
        seen,
        [vec![NAME.to_owned(), "other.io/keep".to_owned()]],
        "{}: applied with the live object",
        server.name()
    );
    assert_eq!(
        api.get("w").await.unwrap().finalizers(),
        [NAME, "other.io/keep"],
        "{}",
        server.name()
    );

    // Deleted: cleaned up, then only ours removed.
    let _ = api.delete("w", &DeleteParams::default()).await.unwrap();
    let deleting = api.get("w").await.unwrap();
    assert!(deleting.metadata.deletion_timestamp.is_some());
    let mut cleaned = 0;
    let out = finalizer(&api, NAME, Arc::new(deleting), async |event| {
        if let FinalizerEvent::Cleanup(_) = event {
            cleaned += 1;
        }
        Ok(Action::Done)
    })
    .await;
    out.unwrap();
    assert_eq!(cleaned, 1, "{}", server.name());
    assert_eq!(
        api.get("w").await.unwrap().finalizers(),
        ["other.io/keep"],
        "{}",
        server.name()
    );
}

on_both_servers!(
    finalizer_adds_cleans_up_and_removes,
    Options::DEFAULT,
    finalizer_lifecycle
);
