use std::sync::Arc;
use std::time::Duration;

use super::*;

/// A controller whose numbers are fixed: what a scrape of it must show.
struct Fixed(Arc<dyn ControllerProbe>);

struct FixedProbe(ControllerSample);

impl ControllerProbe for FixedProbe {
    fn sample(&self) -> ControllerSample {
        self.0.clone()
    }
}

impl ControllerMetrics for Fixed {
    fn probe(&self) -> Arc<dyn ControllerProbe> {
        self.0.clone()
    }
}

fn controller(informer: InformerSample) -> Fixed {
    Fixed(Arc::new(FixedProbe(ControllerSample {
        name: "shop".into(),
        workers: 1,
        stats: ControllerStats::default(),
        hooks: Arc::new(WorkqueueHooks::new()),
        work_duration: work_duration_histogram(),
        reconcile_time: reconcile_time_histogram(),
        unfinished_work: Duration::ZERO,
        longest_running: Duration::ZERO,
        informers: vec![informer],
    })))
}

#[test]
fn informer_stale_refusals_and_store_resource_version_are_exported_per_informer() {
    let metrics = Metrics::new();
    metrics.add_controller(&controller(InformerSample {
        informer: "configmaps.v1".into(),
        handler: "shop".into(),
        relists: 2,
        watch_restarts: 5,
        stale_refusals: 3,
        pending: Some(0),
        store_resource_version: Some(42),
    }));
    let text = metrics.encode();
    for line in [
        "# TYPE informer_stale_refusals counter",
        r#"informer_stale_refusals_total{informer="configmaps.v1"} 3"#,
        r#"informer_relists_total{informer="configmaps.v1"} 2"#,
        r#"informer_watch_restarts_total{informer="configmaps.v1"} 5"#,
        r#"store_resource_version{informer="configmaps.v1"} 42"#,
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    }
}

#[test]
fn an_untracked_store_resource_version_is_left_out() {
    let metrics = Metrics::new();
    metrics.add_controller(&controller(InformerSample {
        informer: "widgets.example.com".into(),
        handler: "shop".into(),
        relists: 0,
        watch_restarts: 0,
        stale_refusals: 0,
        pending: None,
        store_resource_version: None,
    }));
    let text = metrics.encode();
    assert!(!text.contains("store_resource_version{"), "{text}");
    assert!(text.contains(r#"informer_stale_refusals_total{informer="widgets.example.com"} 0"#));
}

#[test]
fn reconcile_total_counts_each_answer_under_controller_runtimes_result_label() {
    let metrics = Metrics::new();
    let mut sample = controller(InformerSample {
        informer: "configmaps.v1".into(),
        handler: "shop".into(),
        relists: 0,
        watch_restarts: 0,
        stale_refusals: 0,
        pending: Some(0),
        store_resource_version: None,
    })
    .0
    .sample();
    sample.stats = ControllerStats {
        successes: 1,
        requeues_after: 2,
        requeues: 3,
        errors: 4,
        ..ControllerStats::default()
    };
    metrics.add_controller(&Fixed(Arc::new(FixedProbe(sample))));
    let text = metrics.encode();
    // controller-runtime's labels: `Result{}`, `Result{RequeueAfter}`, `Result{Requeue}`, an error.
    for line in [
        r#"controller_runtime_reconcile_total{controller="shop",result="success"} 1"#,
        r#"controller_runtime_reconcile_total{controller="shop",result="requeue_after"} 2"#,
        r#"controller_runtime_reconcile_total{controller="shop",result="requeue"} 3"#,
        r#"controller_runtime_reconcile_total{controller="shop",result="error"} 4"#,
        r#"controller_runtime_reconcile_errors_total{controller="shop"} 4"#,
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    }
    assert_eq!(
        text.matches("controller_runtime_reconcile_total{").count(),
        4,
        "one series per result"
    );
}

#[tokio::test]
async fn a_queue_of_your_own_reports_under_client_gos_workqueue_names_until_dropped() {
    use crate::test_support::samples;
    use informer_core::queue::{WorkQueue, take};

    let metrics = Metrics::new();
    let queue = metrics.work_queue("foos", WorkQueue::<String>::builder());
    queue.add("default/a".to_string());
    queue.add("default/b".to_string());
    {
        let item = take(&*queue).await.unwrap();
        queue.add_rate_limited(item.to_string());
    }
    let text = metrics.encode();
    let samples = samples(&text);
    let series = |name: &str| format!(r#"{name}{{controller="foos",name="foos"}}"#);
    assert_eq!(samples[&series("workqueue_adds_total")], 2.0, "{text}");
    assert_eq!(samples[&series("workqueue_retries_total")], 1.0, "{text}");
    assert_eq!(
        samples[&series("workqueue_work_duration_seconds_count")],
        1.0,
        "one item done: {text}"
    );
    assert_eq!(
        samples[&series("workqueue_queue_duration_seconds_count")],
        1.0
    );
    assert_eq!(
        samples[r#"workqueue_depth{controller="foos",name="foos",priority=""}"#], 1.0,
        "b waits; a waits for its retry"
    );
    assert!(samples.contains_key(&series("workqueue_unfinished_work_seconds")));

    drop(queue);
    assert!(
        !metrics.encode().contains(r#"name="foos""#),
        "a dropped queue's series go"
    );
}
