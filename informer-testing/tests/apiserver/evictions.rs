//! A Pod's `eviction` subresource, as kube-apiserver answers it, with PodDisruptionBudgets.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, EvictParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::common::{client_without_retries, pod, raw, server, status, within};

/// Creates Pod `name` labelled `app=web` and, as a kubelet would, writes it `Running`.
async fn running(pods: &Api<Pod>, name: &str) {
    within(pods.create(&PostParams::default(), &pod(name, &[("app", "web")])))
        .await
        .unwrap();
    let running = json!({"status": {"phase": "Running"}});
    within(pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&running)))
        .await
        .unwrap();
}

async fn budget(budgets: &Api<PodDisruptionBudget>, name: &str, status: serde_json::Value) {
    let pdb = PodDisruptionBudget {
        metadata: kube::core::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            selector: Some(LabelSelector {
                match_labels: Some([("app".to_string(), "web".to_string())].into()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    within(budgets.create(&PostParams::default(), &pdb))
        .await
        .unwrap();
    within(budgets.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(&json!({ "status": status })),
    ))
    .await
    .unwrap();
}

#[tokio::test]
async fn a_pending_pod_is_evicted_whatever_its_budget_says() {
    let server = server().await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let budgets: Api<PodDisruptionBudget> = Api::default_namespaced(server.client());
    within(pods.create(&PostParams::default(), &pod("web-0", &[("app", "web")])))
        .await
        .unwrap();
    budget(&budgets, "web", json!({"disruptionsAllowed": 0})).await;
    let answer = within(pods.evict("web-0", &EvictParams::default()))
        .await
        .unwrap();
    assert_eq!(
        answer.status,
        Some(kube::core::response::StatusSummary::Success)
    );
    assert!(within(pods.get_opt("web-0")).await.unwrap().is_none());
}

#[tokio::test]
async fn a_running_pod_is_evicted_only_as_its_budget_allows() {
    let server = server().await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let budgets: Api<PodDisruptionBudget> = Api::default_namespaced(server.client());
    for name in ["web-0", "web-1"] {
        running(&pods, name).await;
    }
    budget(
        &budgets,
        "web",
        json!({"observedGeneration": 1, "disruptionsAllowed": 1, "desiredHealthy": 1, "currentHealthy": 2, "expectedPods": 2}),
    )
    .await;
    within(pods.evict("web-0", &EvictParams::default()))
        .await
        .unwrap();
    assert!(within(pods.get_opt("web-0")).await.unwrap().is_none());
    let pdb = within(budgets.get("web")).await.unwrap().status.unwrap();
    assert_eq!(pdb.disruptions_allowed, 0);
    assert!(pdb.disrupted_pods.unwrap().contains_key("web-0"));

    // The budget allows no more: 429 with the budget's cause, and the Pod stays. (kube's
    // client retries a 429, as kubectl drain does: ask once.)
    let once: Api<Pod> = Api::default_namespaced(client_without_retries(&server));
    let err = within(once.evict("web-1", &EvictParams::default()))
        .await
        .unwrap_err();
    let refused = status(err);
    assert_eq!(
        (
            refused.code,
            refused.reason.as_str(),
            refused.message.as_str()
        ),
        (
            429,
            "TooManyRequests",
            "Cannot evict pod as it would violate the pod's disruption budget."
        )
    );
    let cause = &refused.details.unwrap().causes[0];
    assert_eq!(cause.reason, "DisruptionBudget");
    assert_eq!(
        cause.message,
        "The disruption budget web needs 1 healthy pods and has 2 currently"
    );
    assert!(within(pods.get_opt("web-1")).await.unwrap().is_some());
}

#[tokio::test]
async fn a_budget_not_yet_observed_refuses_and_two_budgets_are_an_error() {
    let server = server().await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let budgets: Api<PodDisruptionBudget> = Api::default_namespaced(server.client());
    running(&pods, "web-0").await;
    // No disruption controller runs here: a budget's status is what a client writes.
    budget(&budgets, "web", json!({"disruptionsAllowed": 5})).await;
    let once: Api<Pod> = Api::default_namespaced(client_without_retries(&server));
    let err = within(once.evict("web-0", &EvictParams::default()))
        .await
        .unwrap_err();
    let refused = status(err);
    assert_eq!(refused.code, 429);
    assert_eq!(
        refused.details.unwrap().causes[0].message,
        "The disruption budget web is still being processed by the server."
    );
    budget(&budgets, "web-too", json!({"observedGeneration": 1})).await;
    let err = within(once.evict("web-0", &EvictParams::default()))
        .await
        .unwrap_err();
    assert_eq!(status(err).code, 500);
}

#[tokio::test]
async fn an_eviction_names_its_pod_and_may_be_a_dry_run() {
    let server = server().await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    within(pods.create(&PostParams::default(), &pod("web-0", &[])))
        .await
        .unwrap();
    let dry_run = EvictParams {
        post_options: PostParams {
            dry_run: true,
            ..Default::default()
        },
        ..Default::default()
    };
    within(pods.evict("web-0", &dry_run)).await.unwrap();
    assert!(within(pods.get_opt("web-0")).await.unwrap().is_some());
    let err = within(pods.evict("missing", &EvictParams::default()))
        .await
        .unwrap_err();
    assert_eq!(status(err).code, 404);
    // The body's name must be the URL's.
    let request = http::Request::post("/api/v1/namespaces/default/pods/web-0/eviction")
        .header("Content-Type", "application/json")
        .body(
            serde_json::to_vec(&json!({
                "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "other"}
            }))
            .unwrap(),
        )
        .unwrap();
    let err = within(server.client().request::<serde_json::Value>(request))
        .await
        .unwrap_err();
    let refused = status(err);
    assert_eq!(
        (refused.code, refused.message.as_str()),
        (400, "name in URL does not match name in Eviction object")
    );
}

/// `createTooManyRequestsError` (`pkg/registry/core/pod/storage/eviction.go`): a budget its
/// controller has not processed refuses with `NewTooManyRequests(..., 10)`, so the `Status`
/// has `retryAfterSeconds: 10` and `ErrorNegotiated` sends `Retry-After: 10` (client-go waits
/// that long before it retries); a budget without disruptions left suggests no delay. A
/// negative `disruptionsAllowed` is a 403, and taking the last allowed disruption turns the
/// budget's `DisruptionAllowed` condition `False` (`UpdateDisruptionAllowedCondition`).
#[tokio::test]
async fn eviction_refusals_carry_the_real_retry_advice() {
    let server = server().await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let budgets: Api<PodDisruptionBudget> = Api::default_namespaced(server.client());
    running(&pods, "web-0").await;
    budget(&budgets, "web", json!({"disruptionsAllowed": 5})).await;
    let evict = async || {
        raw(
            &server,
            "POST",
            "/api/v1/namespaces/default/pods/web-0/eviction",
            &[("Content-Type", "application/json")],
            br#"{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-0"}}"#,
        )
        .await
    };
    let processing = evict().await;
    processing.assert_status(429, "TooManyRequests");
    assert_eq!(processing.header("retry-after"), Some("10"));
    assert_eq!(processing.json()["details"]["retryAfterSeconds"], 10);

    let set_status = async |status: serde_json::Value| {
        within(budgets.patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(&json!({ "status": status })),
        ))
        .await
        .unwrap();
    };
    set_status(json!({"observedGeneration": 1, "disruptionsAllowed": -1})).await;
    let negative = evict().await;
    negative.assert_status(403, "Forbidden");
    assert_eq!(
        negative.json()["message"],
        "poddisruptionbudget.policy \"web\" is forbidden: pdb disruptions allowed is negative"
    );
    assert_eq!(
        negative.json()["details"],
        json!({"name": "web", "group": "policy", "kind": "poddisruptionbudget"})
    );

    set_status(json!({"disruptionsAllowed": 0, "desiredHealthy": 1, "currentHealthy": 1})).await;
    let exhausted = evict().await;
    exhausted.assert_status(429, "TooManyRequests");
    assert_eq!(exhausted.header("retry-after"), None);
    assert!(
        exhausted.json()["details"]
            .get("retryAfterSeconds")
            .is_none()
    );

    set_status(json!({"disruptionsAllowed": 1})).await;
    assert_eq!(evict().await.status, 201);
    let status = within(budgets.get("web")).await.unwrap().status.unwrap();
    assert_eq!(status.disruptions_allowed, 0);
    let condition = &status.conditions.unwrap()[0];
    assert_eq!(
        (
            condition.type_.as_str(),
            condition.status.as_str(),
            condition.reason.as_str(),
            condition.observed_generation
        ),
        ("DisruptionAllowed", "False", "InsufficientPods", Some(1))
    );
}
