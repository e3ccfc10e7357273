//! What the chaos tests share: Deployments to start from, and what must hold of them.

use informer_testing::chaos::{Cluster, Report};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kube::ResourceExt;
use serde_json::{Value, json};

/// The shrinking budget of the buggy controllers' tests: enough to shrink their schedules to
/// a few steps, small enough for CI.
pub const SHRINK_RUNS: usize = 40;

/// A Deployment labelled `chaos=<label>` with `replicas` replicas of nginx.
pub fn deployment(name: &str, label: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": {"chaos": label}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
        },
    })
}

/// Invariant: no Deployment ever controls two ReplicaSets.
pub fn one_replica_set_per_deployment(cluster: &Cluster) -> Result<(), String> {
    for deployment in cluster.list::<Deployment>() {
        let uid = deployment.uid().unwrap_or_default();
        let owned: Vec<String> = cluster
            .controlled_by::<ReplicaSet>(&uid)
            .iter()
            .map(ResourceExt::name_any)
            .collect();
        if owned.len() > 1 {
            return Err(format!(
                "Deployment {} controls {} ReplicaSets: {owned:?}",
                deployment.name_any(),
                owned.len()
            ));
        }
    }
    Ok(())
}

/// Prints the report (the test's output shows it) and checks what every report must say.
pub fn check_report(report: &Report, kind: &str) {
    println!("{report}");
    assert_eq!(report.failure.kind(), kind, "{report}");
    let text = report.to_string();
    assert!(
        text.contains(&format!("failed on seed {}", report.seed)),
        "{text}"
    );
    assert!(text.contains(&report.replay()), "{text}");
    // Shrinking found a smaller failing schedule. Under load (CI runs these tests side by
    // side on two cores) a smaller one may fail only while candidates run concurrently and
    // pass every replay one run at a time; the report then keeps a larger one and lists it.
    let smaller = report.shrunk.len() < report.schedule.len() || !report.set_aside.is_empty();
    assert!(
        !report.shrunk.is_empty() && smaller,
        "shrinking kept {} of {} steps",
        report.shrunk.len(),
        report.schedule.len()
    );
    for (index, step) in &report.shrunk {
        assert!(text.contains(&format!("{index:>3}. {step}")), "{text}");
    }
}
