use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::checker::{Check, Checker, HARNESS, LeaseRef, Observed};
use super::interceptor::{ChaosInterceptor, Control};
use super::report::{Failure, Trace};
use super::schedule::{self, RequestClass};
use super::shrink::{self, Budget};
use super::world::set_pointer;
use super::*;
use crate::apiserver::intercept::with_actor;

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"}, "data": {"v": "1"}})
}

fn world() -> World {
    World::generated([config_map("a"), config_map("b")]).mutate("/data/v", ["1", "2"])
}

// ----- schedules -----

#[test]
fn a_seed_means_one_schedule() {
    let kinds = FaultKind::ALL.to_vec();
    let first = schedule::generate(7, &world(), &kinds, 16);
    assert_eq!(first, schedule::generate(7, &world(), &kinds, 16));
    assert_ne!(first, schedule::generate(8, &world(), &kinds, 16));
}

#[test]
fn generated_schedules_create_every_seed_object_first() {
    let steps = schedule::generate(3, &world(), &FaultKind::ALL, 16);
    assert_eq!(steps[0], Step::World(WorldStep::Create(config_map("a"))));
    assert_eq!(steps[1], Step::World(WorldStep::Create(config_map("b"))));
    assert!(
        steps.len() > 16,
        "the initial creates come on top of the generated steps"
    );
}

#[test]
fn scripted_worlds_keep_their_steps_in_order() {
    let script = vec![
        WorldStep::create(config_map("a")),
        WorldStep::set(config_map("a"), "/data/v", "2"),
        WorldStep::delete(config_map("a")),
    ];
    for seed in 0..20 {
        let steps = schedule::generate(seed, &World::scripted(script.clone()), &FaultKind::ALL, 16);
        let world: Vec<&WorldStep> = steps
            .iter()
            .filter_map(|s| match s {
                Step::World(w) => Some(w),
                _ => None,
            })
            .collect();
        assert_eq!(world, script.iter().collect::<Vec<_>>(), "seed {seed}");
    }
}

#[test]
fn only_the_chosen_fault_kinds_are_generated() {
    let kinds = [FaultKind::Crash];
    for seed in 0..20 {
        for step in schedule::generate(seed, &world(), &kinds, 30) {
            assert!(
                matches!(
                    step,
                    Step::World(_) | Step::Crash { .. } | Step::Wait(_) | Step::Settle
                ),
                "{step}"
            );
        }
        let quiet = schedule::generate(seed, &world(), &[], 30);
        assert!(
            quiet
                .iter()
                .all(|s| matches!(s, Step::World(_) | Step::Wait(_) | Step::Settle))
        );
    }
}

#[test]
fn lease_loss_is_generated_only_with_leader_election() {
    let chaos = Chaos::new(|_c, _s| async {}).world(world());
    let has_lease_loss = |chaos: &Chaos| {
        (0..30).any(|seed| {
            chaos
                .schedule(seed)
                .iter()
                .any(|s| matches!(s, Step::LoseLease { .. }))
        })
    };
    assert!(!has_lease_loss(&chaos));
    let chaos = chaos.leader_election("default", "lock");
    assert!(has_lease_loss(&chaos));
}

#[test]
fn every_step_says_what_it_does() {
    let steps = [
        Step::Crash {
            after_writes: 1,
            down_steps: 2,
        },
        Step::PauseWatches {
            for_steps: 1,
            relist: true,
        },
        Step::FailRequests {
            class: RequestClass::Writes,
            code: 500,
            count: 2,
        },
    ];
    let texts: Vec<String> = steps.iter().map(ToString::to_string).collect();
    assert_eq!(
        texts,
        [
            "fault: crash the controller right after its next write commits, down for 2 steps",
            "fault: watches paused for 1 step, then history compacted and relisted (unobserved states)",
            "fault: the controller's next 2 writes fail with 500",
        ]
    );
}

#[test]
fn a_controller_user_names_its_replica() {
    use super::checker::replica_of;
    assert_eq!(replica_of("replica-2.5"), Some(2));
    assert_eq!(replica_of("replica-0.1"), Some(0));
    assert_eq!(replica_of("world"), None);
    assert_eq!(replica_of("replica-x.1"), None);
}

// ----- the world -----

#[test]
fn set_pointer_of_null_removes_the_key() {
    let mut object = json!({"metadata": {"labels": {"tenant": "a", "app": "web"}}});
    assert!(set_pointer(
        &mut object,
        "/metadata/labels/tenant",
        Value::Null
    ));
    assert_eq!(object, json!({"metadata": {"labels": {"app": "web"}}}));
    assert!(
        set_pointer(&mut object, "/metadata/labels/gone", Value::Null),
        "removing what is not there is no error"
    );
    assert_eq!(object, json!({"metadata": {"labels": {"app": "web"}}}));
}

#[test]
fn set_pointer_creates_missing_objects_and_follows_arrays() {
    let mut object = json!({"spec": {"containers": [{"image": "a"}]}});
    assert!(set_pointer(
        &mut object,
        "/spec/containers/0/image",
        json!("b")
    ));
    assert!(set_pointer(
        &mut object,
        "/metadata/labels/app",
        json!("web")
    ));
    assert_eq!(
        object,
        json!({"spec": {"containers": [{"image": "b"}]}, "metadata": {"labels": {"app": "web"}}})
    );
    assert!(
        !set_pointer(&mut object, "/spec/containers/5/image", json!("c")),
        "no such item"
    );
    assert!(!set_pointer(&mut object, "spec", json!(1)), "not a pointer");
}

#[test]
fn a_world_object_needs_a_type_and_a_name() {
    let nameless = std::panic::catch_unwind(|| World::generated([json!({"kind": "ConfigMap"})]));
    assert!(nameless.is_err());
}

// ----- shrinking -----

fn budget(attempts: usize, runs: usize) -> Budget {
    Budget {
        attempts,
        runs,
        concurrency: 3,
    }
}

#[tokio::test]
async fn ddmin_finds_the_smallest_failing_subset() {
    let failing = |c: Vec<usize>| async move { (c.contains(&3) && c.contains(&11)).then_some(()) };
    let shrunk = shrink::ddmin((0..20).collect(), (), Vec::new(), &budget(1, 500), failing).await;
    assert_eq!(shrunk.kept, [3, 11]);
    assert!(!shrunk.exhausted);
}

#[tokio::test]
async fn ddmin_tries_hints_first() {
    let runs = AtomicUsize::new(0);
    let failing = |c: Vec<usize>| {
        runs.fetch_add(1, Ordering::Relaxed);
        async move { c.contains(&4).then_some(()) }
    };
    let shrunk = shrink::ddmin(
        (0..20).collect(),
        (),
        vec![vec![4, 5]],
        &budget(1, 500),
        failing,
    )
    .await;
    assert_eq!(shrunk.kept, [4]);
    assert_eq!(runs.load(Ordering::Relaxed), shrunk.runs);
    assert!(
        shrunk.runs <= 3,
        "the hint leaves two steps to split: {}",
        shrunk.runs
    );
}

#[tokio::test]
async fn ddmin_retries_a_candidate_before_it_counts_as_passing() {
    // Fails only on every third run of a candidate with step 2: timing-dependent.
    let seen = Mutex::new(std::collections::HashMap::<Vec<usize>, usize>::new());
    let flaky = |c: Vec<usize>| {
        let mut seen = seen.lock();
        let n = seen.entry(c.clone()).or_default();
        *n += 1;
        let fails = c.contains(&2) && *n % 3 == 0;
        async move { fails.then_some(()) }
    };
    let shrunk = shrink::ddmin((0..8).collect(), (), Vec::new(), &budget(3, 500), flaky).await;
    assert_eq!(shrunk.kept, [2]);
}

#[tokio::test]
async fn ddmin_stops_at_its_budget() {
    let failing = |c: Vec<usize>| async move { (c.len() > 1).then_some(()) };
    let shrunk = shrink::ddmin((0..64).collect(), (), Vec::new(), &budget(2, 5), failing).await;
    assert_eq!(shrunk.runs, 5);
    assert!(shrunk.exhausted);
}

#[tokio::test]
async fn ddmin_that_spends_its_budget_on_a_success_still_says_it_stopped_there() {
    let failing = |c: Vec<usize>| async move { (c.len() > 1).then_some(()) };
    let one_at_a_time = Budget {
        attempts: 1,
        runs: 1,
        concurrency: 1,
    };
    let shrunk = shrink::ddmin((0..64).collect(), (), Vec::new(), &one_at_a_time, failing).await;
    assert_eq!((shrunk.runs, shrunk.kept.len()), (1, 32));
    assert!(shrunk.exhausted, "32 steps left, and smaller ones fail too");
}

#[tokio::test]
async fn ddmin_records_every_candidate_it_takes_smallest_last() {
    let failing = |c: Vec<usize>| async move { c.contains(&5).then_some(()) };
    let shrunk = shrink::ddmin((0..8).collect(), (), Vec::new(), &budget(1, 500), failing).await;
    assert_eq!(shrunk.kept, [5]);
    assert_eq!(shrunk.path.last(), Some(&vec![5]));
    for pair in shrunk.path.windows(2) {
        assert!(pair[1].len() < pair[0].len(), "{:?}", shrunk.path);
        assert!(
            pair[1].iter().all(|i| pair[0].contains(i)),
            "{:?}",
            shrunk.path
        );
    }
}

#[tokio::test]
async fn confirm_steps_back_to_the_smallest_schedule_that_fails_when_replayed() {
    // The smallest candidate failed while shrinking (under load) but never on its own.
    let candidates = vec![vec![2], vec![2, 3], vec![0, 1, 2, 3]];
    let replay = |c: Vec<usize>| async move { (c.len() > 1).then_some(c.len()) };
    let confirmed = shrink::confirm(&candidates, 3, replay).await;
    assert_eq!(confirmed.chosen, 1);
    assert_eq!(confirmed.runs, 1);
    assert_eq!(confirmed.evidence, Some(2));
    assert_eq!(
        confirmed.total, 4,
        "three replays of the first, one of the second"
    );
}

#[tokio::test]
async fn confirm_replays_a_schedule_until_it_fails() {
    let n = AtomicUsize::new(0);
    let on_the_third = |_c: Vec<usize>| {
        let fails = n.fetch_add(1, Ordering::Relaxed) == 2;
        async move { fails.then_some(()) }
    };
    let confirmed = shrink::confirm(&[vec![4]], 6, on_the_third).await;
    assert_eq!((confirmed.chosen, confirmed.runs), (0, 3));
    assert!(confirmed.evidence.is_some(), "the third replay failed");
    assert_eq!(confirmed.total, 3);
}

#[tokio::test]
async fn confirm_keeps_the_smallest_when_no_replay_fails() {
    let candidates = vec![vec![2], vec![0, 1, 2, 3]];
    let never = |_c: Vec<usize>| async move { None::<()> };
    let confirmed = shrink::confirm(&candidates, 2, never).await;
    assert_eq!((confirmed.chosen, confirmed.runs), (0, 2));
    assert!(confirmed.evidence.is_none());
    assert_eq!(confirmed.total, 4);
}

#[test]
fn split_makes_contiguous_chunks_of_nearly_equal_length() {
    let chunks = shrink::split(&[0, 1, 2, 3, 4, 5, 6], 3);
    assert_eq!(chunks, [vec![0, 1], vec![2, 3], vec![4, 5, 6]]);
    assert_eq!(shrink::split(&[0, 1], 5), [vec![0], vec![1]]);
}

// ----- seeds and reports -----

#[test]
fn the_replay_variable_names_a_seed_and_optionally_its_steps() {
    let plan = Plan::parse_seed("17").expect("a seed");
    assert_eq!((plan.seeds, plan.only), (vec![17], None));
    let plan = Plan::parse_seed("17:0, 3,9").expect("a seed and steps");
    assert_eq!((plan.seeds, plan.only), (vec![17], Some(vec![0, 3, 9])));
    assert!(Plan::parse_seed("x").is_none());
    assert!(Plan::parse_seed("1:a").is_none());
}

#[test]
fn failures_of_one_invariant_are_one_kind_for_shrinking() {
    let broken = |name: &str, revision| Failure::Invariant {
        name: name.into(),
        message: "m".into(),
        revision,
    };
    assert!(broken("a", 3).same_kind(&broken("a", 9)));
    assert!(!broken("a", 3).same_kind(&broken("b", 3)));
    let stuck = Failure::NotConverged {
        message: "x".into(),
        waited: Duration::ZERO,
    };
    assert!(!broken("a", 3).same_kind(&stuck));
    assert_eq!(stuck.kind(), "not converged");
}

#[test]
fn the_replay_lines_name_the_test_binary_they_ran_in() {
    use super::cargo_target_of;
    assert_eq!(
        cargo_target_of("my-operator", "chaos-0123456789abcdef").as_deref(),
        Some("-p my-operator --test chaos")
    );
    assert_eq!(
        cargo_target_of("my-operator", "my_operator-0123456789abcdef").as_deref(),
        Some("-p my-operator --lib")
    );
    assert_eq!(
        cargo_target_of("my-operator", "chaos"),
        None,
        "no hash: not cargo's"
    );
    // Run here: this crate's own unit tests.
    assert_eq!(
        super::cargo_target().as_deref(),
        Some("-p informer-testing --lib")
    );
}

#[test]
fn a_report_prints_its_seed_its_shrunk_schedule_and_how_to_replay_it() {
    let schedule = vec![
        Step::World(WorldStep::create(config_map("a"))),
        Step::Wait(Duration::from_millis(5)),
        Step::DropWatches { compact: true },
    ];
    let report = Report {
        name: "demo".into(),
        test: Some("chaos::demo_under_chaos".into()),
        cargo_target: Some("-p my-operator --test chaos".into()),
        run_ignored: false,
        attempts: 3,
        seed: 42,
        seeds_run: 3,
        failure: Failure::Harness {
            message: "x".into(),
        },
        shrunk: vec![(0, schedule[0].clone()), (2, schedule[2].clone())],
        schedule,
        shrink_runs: 7,
        shrink_budget_exhausted: false,
        replays: 2,
        replays_failed: 1,
        set_aside: vec![vec![2]],
        trace: Vec::new(),
        scenario: false,
    };
    let text = report.to_string();
    assert!(text.contains("failed on seed 42"), "{text}");
    assert!(text.contains("INFORMER_CHAOS_SEED=42:0,2"), "{text}");
    // The replay lines run the failing test alone, and say a replay may need several runs.
    assert!(
        text.contains(
            "INFORMER_CHAOS_SEED=42 cargo test -p my-operator --test chaos -- --exact chaos::demo_under_chaos"
        ),
        "{text}"
    );
    assert!(text.contains("up to 3 runs to fail"), "{text}");
    // How its replays one run at a time went, and a smaller schedule set aside.
    assert!(
        text.contains("replayed one run at a time, it failed on replay 2"),
        "{text}"
    );
    assert!(
        text.contains("1 smaller schedule failed while shrinking, under the load of concurrent runs, but passed every replay one run at a time; the smallest: INFORMER_CHAOS_SEED=42:2"),
        "{text}"
    );
    assert!(
        text.contains("    0. world: create ConfigMap default/a"),
        "{text}"
    );
    assert!(
        text.contains("    2. fault: watches dropped and history compacted (relist)"),
        "{text}"
    );
    // An `#[ignore]`d chaos test, run with `--ignored`: its replay lines run it too.
    let ignored = Report {
        run_ignored: true,
        ..report
    };
    assert!(
        ignored.to_string().contains(
            "cargo test -p my-operator --test chaos -- --exact chaos::demo_under_chaos --include-ignored"
        ),
        "{ignored}"
    );
}

/// Every kind of step, as a report's scenario code must write them.
fn every_kind_of_step() -> Vec<Step> {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "default"}, "data": {"v": "caf\u{e9}\u{1}"}});
    vec![
        Step::World(WorldStep::create(&cm)),
        Step::World(WorldStep::set(&cm, "/data/v", "2")),
        Step::World(WorldStep::recreate(&cm)),
        Step::World(WorldStep::delete(&cm)),
        Step::Crash {
            after_writes: 1,
            down_steps: 2,
        },
        Step::StaleRestart {
            writes_back: 2,
            for_steps: 1,
        },
        Step::DelayWatches {
            max: Duration::from_millis(150),
            salt: 9,
            for_steps: 3,
        },
        Step::DropWatches { compact: true },
        Step::PauseWatches {
            for_steps: 2,
            relist: false,
        },
        Step::Conflicts { count: 1 },
        Step::FailRequests {
            class: RequestClass::Reads,
            code: 429,
            count: 4,
        },
        Step::LoseLease { for_steps: 1 },
        Step::Wait(Duration::from_millis(20)),
        Step::Settle,
    ]
}

#[test]
fn a_reports_scenario_code_is_rust_that_makes_the_same_steps() {
    let steps = every_kind_of_step();
    let report = Report {
        name: "demo".into(),
        test: None,
        cargo_target: None,
        run_ignored: false,
        attempts: 3,
        seed: 1,
        seeds_run: 1,
        failure: Failure::Harness {
            message: "x".into(),
        },
        shrunk: steps.iter().cloned().enumerate().collect(),
        schedule: steps.clone(),
        shrink_runs: 0,
        shrink_budget_exhausted: false,
        replays: 0,
        replays_failed: 0,
        set_aside: Vec::new(),
        trace: Vec::new(),
        scenario: false,
    };
    // What the report prints, pasted here as code: it compiles, and makes the same steps.
    let pasted: Vec<Step> = vec![
        Step::World(WorldStep::create(
            serde_json::json!({"apiVersion":"v1","data":{"v":"caf\u{e9}\u{0001}"},"kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}}),
        )),
        Step::World(WorldStep::set(
            serde_json::json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}}),
            "/data/v",
            serde_json::json!("2"),
        )),
        Step::World(WorldStep::recreate(
            serde_json::json!({"apiVersion":"v1","data":{"v":"caf\u{e9}\u{0001}"},"kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}}),
        )),
        Step::World(WorldStep::delete(
            serde_json::json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}}),
        )),
        Step::Crash {
            after_writes: 1,
            down_steps: 2,
        },
        Step::StaleRestart {
            writes_back: 2,
            for_steps: 1,
        },
        Step::DelayWatches {
            max: Duration::from_millis(150),
            salt: 9,
            for_steps: 3,
        },
        Step::DropWatches { compact: true },
        Step::PauseWatches {
            for_steps: 2,
            relist: false,
        },
        Step::Conflicts { count: 1 },
        Step::FailRequests {
            class: RequestClass::Reads,
            code: 429,
            count: 4,
        },
        Step::LoseLease { for_steps: 1 },
        Step::Wait(Duration::from_millis(20)),
        Step::Settle,
    ];
    assert_eq!(pasted, steps);
    let code = report.scenario_code();
    let lines: Vec<&str> = code.lines().collect();
    assert_eq!(lines.first(), Some(&".scenario(["));
    assert_eq!(lines.last(), Some(&"])"));
    for (line, step) in lines[1..lines.len() - 1].iter().zip(&steps) {
        assert_eq!(line.trim().trim_end_matches(','), step.code());
    }
    assert_eq!(lines.len(), steps.len() + 2);
    // A control character is escaped as Rust writes it, not as JSON does (`\u0001`).
    assert!(code.contains("\"caf\u{e9}\\u{0001}\""), "{code}");
    let text = report.to_string();
    assert!(text.contains("the shrunk schedule as a scenario"));
    assert!(
        text.contains("use informer::testing::chaos::{RequestClass, Step, WorldStep}; use std::time::Duration;"),
        "the imports the code needs: {text}"
    );
}

#[test]
fn a_scenario_report_says_so_and_names_no_seed_to_replay() {
    let report = Report {
        name: "demo".into(),
        test: None,
        cargo_target: None,
        run_ignored: false,
        attempts: 3,
        seed: 0,
        seeds_run: 1,
        failure: Failure::Harness {
            message: "x".into(),
        },
        shrunk: vec![(0, Step::Settle)],
        schedule: vec![Step::Settle],
        shrink_runs: 0,
        shrink_budget_exhausted: false,
        replays: 0,
        replays_failed: 0,
        set_aside: Vec::new(),
        trace: Vec::new(),
        scenario: true,
    };
    let text = report.to_string();
    assert!(text.contains("failed on its scenario"), "{text}");
    assert!(!text.contains("INFORMER_CHAOS_SEED"), "{text}");
    assert!(text.contains("Step::Settle"), "{text}");
}

// ----- the cluster -----

#[test]
fn the_cluster_reads_events_and_autoscalers_through_both_of_their_apis() {
    // The server stores core Events and autoscaling/v2 autoscalers and serves each through a
    // second API too: a check reads whichever it names (EventRecorder writes events.k8s.io).
    let mut cluster = Cluster::from_objects([
        json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web.1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
            "reason": "TTLExpired", "type": "Warning"}),
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxReplicas": 5}}),
    ]);
    let events = cluster.list::<k8s_openapi::api::events::v1::Event>();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].reason.as_deref(), Some("TTLExpired"));
    assert_eq!(
        events[0].regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("web")
    );
    assert_eq!(cluster.list::<k8s_openapi::api::core::v1::Event>().len(), 1);
    let v1 = cluster.list::<k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler>();
    assert_eq!(v1.len(), 1);
    // Gone from both when the stored object goes.
    let stored = cluster
        .get_json("v1", "Event", Some("default"), "web.1")
        .cloned()
        .unwrap();
    cluster.remove(&stored);
    assert!(
        cluster
            .list::<k8s_openapi::api::events::v1::Event>()
            .is_empty()
    );
}

#[test]
fn the_cluster_finds_children_by_their_controller_uid() {
    let owned = |name: &str, uid: &str, controller: bool| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default",
                "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "p", "uid": uid, "controller": controller}]}})
    };
    let cluster = Cluster::from_objects([
        owned("a", "u1", true),
        owned("b", "u1", false),
        owned("c", "u2", true),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p", "namespace": "default", "uid": "u1"}}),
    ]);
    let names: Vec<Option<String>> = cluster
        .controlled_by::<ConfigMap>("u1")
        .into_iter()
        .map(|c| c.metadata.name)
        .collect();
    assert_eq!(names, [Some("a".to_string())]);
    assert!(cluster.has_uid("u1") && !cluster.has_uid("u2"));
}

// ----- against a server -----

struct Harness {
    server: TestApiServer,
    control: Arc<Control>,
    crashes: mpsc::UnboundedReceiver<Arc<str>>,
}

async fn harness() -> Harness {
    let server = TestApiServer::start().await.expect("the server starts");
    let (tx, crashes) = mpsc::unbounded_channel();
    let control = Control::new(Arc::new(Trace::new()), tx);
    *server.shared().interceptor.write() = Some(Arc::new(ChaosInterceptor(control.clone())));
    Harness {
        server,
        control,
        crashes,
    }
}

fn config_maps(client: kube::Client) -> Api<ConfigMap> {
    Api::namespaced(client, "default")
}

fn new_config_map(name: &str) -> ConfigMap {
    serde_json::from_value(config_map(name)).expect("a ConfigMap")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leases_renewals_stay_out_of_the_trace_its_first_write_and_failures_do_not() {
    use k8s_openapi::api::coordination::v1::Lease;
    let server = TestApiServer::start().await.expect("the server starts");
    let (tx, _crashes) = mpsc::unbounded_channel();
    let trace = Arc::new(Trace::new());
    let control = Control::new(trace.clone(), tx);
    *server.shared().interceptor.write() = Some(Arc::new(ChaosInterceptor(control)));
    let leases: Api<Lease> = Api::namespaced(server.user_client("replica-0.1"), "default");
    let mut lease: Lease =
        serde_json::from_value(json!({"metadata": {"name": "shard-0"}})).unwrap();
    lease = leases.create(&PostParams::default(), &lease).await.unwrap();
    for _ in 0..3 {
        lease = leases
            .replace("shard-0", &PostParams::default(), &lease)
            .await
            .unwrap();
    }
    // A stale renewal fails with a conflict: traced.
    let mut stale = lease.clone();
    stale.metadata.resource_version = Some("1".into());
    assert!(
        leases
            .replace("shard-0", &PostParams::default(), &stale)
            .await
            .is_err()
    );
    let traced: Vec<String> = trace
        .events()
        .into_iter()
        .filter(|e| e.what.contains("leases"))
        .map(|e| e.what)
        .collect();
    // The create, the first update of the Lease by name (the create named no Lease in its
    // path), not the two renewals after it, and the failed one.
    assert_eq!(
        traced,
        [
            "create leases in default -> 201",
            "update leases default/shard-0 -> 200",
            "update leases default/shard-0 -> 409"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_takes_effect_right_after_the_write_commits() {
    let mut h = harness().await;
    let api = config_maps(h.server.user_client("replica-0.1"));
    h.control.crash_after(Some(1));
    let first = tokio::spawn({
        let api = api.clone();
        async move {
            api.create(&PostParams::default(), &new_config_map("one"))
                .await
        }
    });
    let user = h.crashes.recv().await.expect("a crash is decided");
    assert_eq!(&*user, "replica-0.1");
    assert!(
        h.server
            .get_json("v1", "ConfigMap", Some("default"), "one")
            .is_some(),
        "committed"
    );
    // Its next write is held: it never reaches the store.
    let second = tokio::spawn({
        let api = api.clone();
        async move {
            api.create(&PostParams::default(), &new_config_map("two"))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !first.is_finished() && !second.is_finished(),
        "the crashed process gets no answer"
    );
    assert!(
        h.server
            .get_json("v1", "ConfigMap", Some("default"), "two")
            .is_none()
    );
    // Once its task is gone, what it still sends is refused.
    h.control.release(&user);
    let refused = second.await.expect("joined").expect_err("refused");
    assert!(
        matches!(&refused, kube::Error::Api(status) if status.code == 401),
        "{refused:?}"
    );
    assert!(
        h.server
            .get_json("v1", "ConfigMap", Some("default"), "two")
            .is_none()
    );
    // Other users are untouched.
    config_maps(h.server.user_client("replica-0.2"))
        .create(&PostParams::default(), &new_config_map("three"))
        .await
        .expect("a new incarnation writes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_failures_hit_only_the_controllers_requests() {
    let h = harness().await;
    h.control.fail(RequestClass::Writes, 409, 1);
    let controller = config_maps(h.server.user_client("replica-0.1"));
    let error = controller
        .create(&PostParams::default(), &new_config_map("a"))
        .await
        .expect_err("injected");
    assert!(matches!(error, kube::Error::Api(status) if status.code == 409));
    config_maps(h.server.client())
        .create(&PostParams::default(), &new_config_map("b"))
        .await
        .expect("the test's own client is not a controller");
    controller
        .create(&PostParams::default(), &new_config_map("a"))
        .await
        .expect("one failure only");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_is_a_write_by_another_client_just_before_the_controllers() {
    use kube::api::{Patch, PatchParams};
    let server = Arc::new(TestApiServer::start().await.expect("the server starts"));
    let (tx, _crashes) = mpsc::unbounded_channel();
    let control = Control::new(Arc::new(Trace::new()), tx);
    control.set_touch(super::run::touch(Arc::downgrade(&server)));
    *server.shared().interceptor.write() = Some(Arc::new(ChaosInterceptor(control.clone())));
    server.create_json(config_map("a")).expect("created");
    let api = config_maps(server.user_client("replica-0.1"));
    let read = api.get("a").await.expect("exists");
    control.conflicts(2);
    // A patch that names the version it read conflicts: the object changed meanwhile.
    let guarded = Patch::Merge(
        json!({"metadata": {"resourceVersion": read.metadata.resource_version}, "data": {"v": "2"}}),
    );
    let error = api
        .patch("a", &PatchParams::default(), &guarded)
        .await
        .expect_err("a conflict");
    assert!(
        matches!(&error, kube::Error::Api(status) if status.code == 409),
        "{error:?}"
    );
    let touched = server
        .get_json("v1", "ConfigMap", Some("default"), "a")
        .expect("exists");
    assert_eq!(
        touched["metadata"]["annotations"]["chaos.informer.dev/touched"],
        "1"
    );
    // One that does not goes through, after the other client's write.
    let blind = Patch::Merge(json!({"data": {"v": "3"}}));
    let patched = api
        .patch("a", &PatchParams::default(), &blind)
        .await
        .expect("no precondition");
    assert_eq!(
        patched.metadata.annotations.unwrap()["chaos.informer.dev/touched"],
        "2"
    );
    // Then no more.
    let patched = api
        .patch("a", &PatchParams::default(), &blind)
        .await
        .expect("patched");
    assert_eq!(
        patched.metadata.annotations.unwrap()["chaos.informer.dev/touched"],
        "2"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_attributes_each_change_to_the_user_that_made_it() {
    let h = harness().await;
    let subscription = h.server.shared().store.subscribe(None).expect("subscribed");
    config_maps(h.server.user_client("replica-3.1"))
        .create(&PostParams::default(), &new_config_map("a"))
        .await
        .expect("created");
    with_actor(Some(Arc::from("world")), || {
        h.server.create_json(config_map("b"))
    })
    .expect("created");
    h.server.create_json(config_map("c")).expect("created");
    let mut actors = Vec::new();
    for _ in 0..3 {
        let change = subscription.next().await.expect("a change");
        actors.push(change.actor.as_deref().map(str::to_string));
    }
    assert_eq!(
        actors,
        [Some("replica-3.1".into()), Some("world".into()), None]
    );
}

/// The chunks a watch of `user` delivers, collected.
async fn watch_lines(server: &TestApiServer, user: &str) -> mpsc::UnboundedReceiver<String> {
    use futures::StreamExt as _;
    let api = config_maps(server.user_client(user));
    let (tx, rx) = mpsc::unbounded_channel();
    let events = api
        .watch(&kube::api::WatchParams::default(), "0")
        .await
        .expect("watching");
    tokio::spawn(async move {
        futures::pin_mut!(events);
        while let Some(Ok(event)) = events.next().await {
            let line = match event {
                kube::api::WatchEvent::Added(cm) => {
                    format!("added {}", cm.metadata.name.unwrap_or_default())
                }
                kube::api::WatchEvent::Deleted(cm) => {
                    format!("deleted {}", cm.metadata.name.unwrap_or_default())
                }
                // A watch from "0" ends its (empty) initial events with a bookmark, as
                // kube-apiserver's does; bookmarks are not what these tests look at.
                kube::api::WatchEvent::Bookmark(_) => continue,
                other => format!("{other:?}").chars().take(20).collect(),
            };
            if tx.send(line).is_err() {
                return;
            }
        }
        let _ = tx.send("end".to_string());
    });
    rx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_watches_deliver_what_they_held_at_once_when_resumed() {
    let h = harness().await;
    let mut lines = watch_lines(&h.server, "replica-0.1").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    h.control.watches(|w| w.paused = true);
    h.server.create_json(config_map("a")).expect("created");
    h.server
        .delete_json("v1", "ConfigMap", Some("default"), "a")
        .expect("deleted");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(lines.try_recv().is_err(), "nothing delivered while paused");
    h.control.watches(|w| w.paused = false);
    assert_eq!(lines.recv().await.as_deref(), Some("added a"));
    assert_eq!(lines.recv().await.as_deref(), Some("deleted a"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_watch_ends_and_drops_what_it_held() {
    let h = harness().await;
    let mut lines = watch_lines(&h.server, "replica-0.1").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    h.control.watches(|w| w.paused = true);
    h.server.create_json(config_map("a")).expect("created");
    tokio::time::sleep(Duration::from_millis(100)).await;
    h.control.watches(|w| {
        w.epoch += 1;
        w.paused = false;
    });
    assert_eq!(
        lines.recv().await.as_deref(),
        Some("end"),
        "never saw the create"
    );
}

/// A checker over `server`'s changes with `invariants` (and the Lease `default/lock`).
fn checker(
    server: &TestApiServer,
    invariants: Vec<Check>,
) -> (Arc<Mutex<Observed>>, tokio::task::JoinHandle<()>) {
    let observed = Arc::new(Mutex::new(Observed::new()));
    let checker = Checker {
        observed: observed.clone(),
        invariants: Arc::from(invariants),
        lease: Some(LeaseRef {
            namespace: "default".into(),
            name: "lock".into(),
        }),
        trace: Arc::new(Trace::new()),
        revisions: watch::channel(0).0,
        traced_after: 0,
    };
    let subscription = server
        .shared()
        .store
        .subscribe(Some(0))
        .expect("subscribed");
    (observed, tokio::spawn(checker.follow(subscription)))
}

async fn settled(observed: &Mutex<Observed>, revision: u64) {
    for _ in 0..3000 {
        if observed.lock().cluster.revision() >= revision {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the checker did not reach revision {revision}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariants_run_on_every_committed_state() {
    let server = TestApiServer::start().await.expect("the server starts");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Check {
        name: "records".into(),
        check: Arc::new({
            let seen = seen.clone();
            move |cluster: &Cluster| {
                seen.lock().push((
                    cluster.revision(),
                    cluster.list_json("v1", "ConfigMap").count(),
                ));
                Ok(())
            }
        }),
    };
    let (observed, _task) = checker(&server, vec![record]);
    let start = server.resource_version();
    server.create_json(config_map("a")).expect("created");
    server
        .delete_json("v1", "ConfigMap", Some("default"), "a")
        .expect("deleted");
    server.create_json(config_map("b")).expect("created");
    settled(&observed, start + 3).await;
    let seen: Vec<(u64, usize)> = seen
        .lock()
        .iter()
        .copied()
        .filter(|(r, _)| *r > start)
        .collect();
    assert_eq!(
        seen,
        [(start + 1, 1), (start + 2, 0), (start + 3, 1)],
        "the transient state included"
    );
}

fn lease(holder: &str) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "lock", "namespace": "default"},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 1}})
}

fn as_user<T>(user: &str, work: impl FnOnce() -> T) -> T {
    with_actor(Some(Arc::from(user)), work)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_after_the_lease_passed_to_another_holder_fails_the_run() {
    let server = TestApiServer::start().await.expect("the server starts");
    let (observed, _task) = checker(&server, Vec::new());
    as_user("replica-0.1", || server.create_json(lease("replica-0.1"))).expect("created");
    as_user("replica-0.1", || server.create_json(config_map("before"))).expect("created");
    let mut taken = server
        .get_json("coordination.k8s.io/v1", "Lease", Some("default"), "lock")
        .expect("exists");
    taken["spec"]["holderIdentity"] = json!("informer-chaos");
    as_user(HARNESS, || server.update_json(taken)).expect("taken over");
    let lost_at = server.resource_version();
    as_user("replica-0.1", || server.create_json(config_map("after"))).expect("created");
    settled(&observed, lost_at + 1).await;
    let failure = observed.lock().failure.clone().expect("a failure");
    match failure {
        Failure::WriteAfterLeaseLoss {
            user,
            identity,
            lost_at: at,
            write,
        } => {
            assert_eq!(
                (user.as_str(), identity.as_str(), at),
                ("replica-0.1", "replica-0.1", lost_at)
            );
            assert!(write.contains("ConfigMap default/after"), "{write}");
        }
        other => panic!("{other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_takes_its_lease_back_may_write_again() {
    let server = TestApiServer::start().await.expect("the server starts");
    let (observed, _task) = checker(&server, Vec::new());
    as_user("replica-0.1", || server.create_json(lease("replica-0.1"))).expect("created");
    let get = || {
        server
            .get_json("coordination.k8s.io/v1", "Lease", Some("default"), "lock")
            .expect("exists")
    };
    let mut free = get();
    free["spec"]["holderIdentity"] = json!("");
    as_user(HARNESS, || server.update_json(free)).expect("released");
    let mut again = get();
    again["spec"]["holderIdentity"] = json!("replica-0.1");
    as_user("replica-0.1", || server.update_json(again)).expect("acquired again");
    as_user("replica-0.1", || server.create_json(config_map("after"))).expect("created");
    settled(&observed, server.resource_version()).await;
    assert!(
        observed.lock().failure.is_none(),
        "{:?}",
        observed.lock().failure
    );
    let holders: HashSet<String> = [observed.lock().lease.holder.clone()].into();
    assert_eq!(holders, HashSet::from(["replica-0.1".to_string()]));
}

#[test]
fn a_trace_keeps_how_a_run_began_and_how_it_ended() {
    let trace = Trace::new();
    for i in 0..5000 {
        trace.record("who", i.to_string());
    }
    let events = trace.events();
    assert_eq!(events.len(), 1000 + 1 + 3000);
    assert_eq!(events[0].what, "0");
    assert_eq!(events[999].what, "999");
    assert_eq!(events[1000].what, "... 1000 events left out ...");
    assert_eq!(events[1001].what, "2000");
    assert_eq!(events.last().map(|e| e.what.as_str()), Some("4999"));
}

#[test]
fn a_replay_runs_the_steps_it_names_or_all() {
    assert_eq!(steps_to_run(None, 3, 4, "demo"), [0, 1, 2, 3]);
    assert_eq!(steps_to_run(Some(&[0, 2]), 3, 4, "demo"), [0, 2]);
}

#[test]
#[should_panic(
    expected = "names step 9, but seed 3's schedule in chaos test \"demo\" has 4 steps (0 to 3)"
)]
fn a_replay_naming_a_step_past_the_schedule_is_refused() {
    steps_to_run(Some(&[0, 9]), 3, 4, "demo");
}
