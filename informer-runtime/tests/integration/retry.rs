//! `retry_on_conflict` through a real `kube::Client` against the in-process API server: a
//! write that loses a race is tried again on a fresh read, and nobody's change is lost.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::time::Duration;

use super::support::server;
use informer_runtime::retry::{RetryBackoff, retry_on_conflict};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

fn config_map(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.data = Some(
        data.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
    );
    cm
}

fn counter(cm: &ConfigMap) -> u32 {
    cm.data
        .as_ref()
        .and_then(|d| d.get("n"))
        .map_or(0, |n| n.parse().unwrap())
}

#[tokio::test]
async fn a_replace_that_lost_a_race_is_retried_on_a_fresh_read() {
    let server = server().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(
        &PostParams::default(),
        &config_map("counter", &[("n", "0")]),
    )
    .await
    .unwrap();

    let attempts = Cell::new(0);
    let written = retry_on_conflict(RetryBackoff::DEFAULT_RETRY, || {
        attempts.set(attempts.get() + 1);
        let first = attempts.get() == 1;
        let api = api.clone();
        async move {
            let mut cm = api.get("counter").await?;
            if first {
                // Someone else writes between our read and our write.
                let other = json!({"data": {"other": "theirs"}});
                api.patch("counter", &PatchParams::default(), &Patch::Merge(&other))
                    .await?;
            }
            let n = counter(&cm) + 1;
            cm.data
                .get_or_insert_default()
                .insert("n".into(), n.to_string());
            api.replace("counter", &PostParams::default(), &cm).await
        }
    })
    .await
    .expect("the second attempt succeeds");

    assert_eq!(attempts.get(), 2, "the conflict was retried once");
    let data = written.data.unwrap();
    assert_eq!(data["n"], "1");
    assert_eq!(data["other"], "theirs", "the other writer's change is kept");
}

#[tokio::test]
async fn already_exists_is_not_retried() {
    let server = server().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("taken", &[]))
        .await
        .unwrap();

    let attempts = Cell::new(0);
    let err = retry_on_conflict(RetryBackoff::DEFAULT_RETRY, || {
        attempts.set(attempts.get() + 1);
        let api = api.clone();
        async move {
            api.create(&PostParams::default(), &config_map("taken", &[]))
                .await
        }
    })
    .await
    .unwrap_err();

    assert!(
        matches!(&err, kube::Error::Api(s) if s.reason == "AlreadyExists"),
        "{err}"
    );
    assert_eq!(attempts.get(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_increments_lose_no_update() {
    let server = server().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("shared", &[("n", "0")]))
        .await
        .unwrap();
    let (writers, increments) = (4, 10);
    // Enough attempts for four writers on one object, close together.
    let backoff = RetryBackoff {
        steps: 100,
        duration: Duration::from_millis(1),
        ..RetryBackoff::DEFAULT_RETRY
    };

    let tasks: Vec<_> = (0..writers)
        .map(|_| {
            let api = api.clone();
            tokio::spawn(async move {
                for _ in 0..increments {
                    retry_on_conflict(backoff, || async {
                        let mut cm = api.get("shared").await?;
                        let n = counter(&cm) + 1;
                        cm.data
                            .get_or_insert_default()
                            .insert("n".into(), n.to_string());
                        api.replace("shared", &PostParams::default(), &cm).await
                    })
                    .await
                    .expect("each increment lands within its attempts");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }

    assert_eq!(
        counter(&api.get("shared").await.unwrap()),
        writers * increments
    );
}
