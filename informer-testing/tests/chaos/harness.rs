//! The harness on kube-rs controllers: a correct one passes, a buggy one is caught and its
//! schedule shrunk.

use std::time::Duration;

use informer_testing::chaos::{
    self, Chaos, Cluster, Failure, FaultKind, RequestClass, Step, World, WorldStep,
};

use super::mirror::{self, source};

fn mirror_test(generated_names: bool) -> Chaos {
    Chaos::new(move |client, stop| mirror::run(client, stop, generated_names))
        .world(
            World::generated([source("alpha", "a"), source("beta", "b")])
                .mutate("/data/mode", ["a", "b", "c"]),
        )
        .invariant("one mirror per source", mirror::one_mirror_per_source)
        .converges(mirror::mirrored)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_correct_kube_rs_controller_passes_every_seed() {
    mirror_test(false).name("mirror").run().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kube_rs_controller_creating_from_a_stale_cache_is_caught_and_shrunk() {
    let report = mirror_test(true)
        .name("mirror with generated names")
        .shrinking(32, 3)
        .check()
        .await
        .expect_err("a stale cache makes a second mirror");
    println!("{report}");
    assert!(
        matches!(&report.failure, Failure::Invariant { name, .. } if name == "one mirror per source"),
        "{report}"
    );
    assert!(report.shrunk.len() < report.schedule.len(), "{report}");
    // What was shrunk failed again when replayed one run at a time (candidates run
    // concurrently while shrinking, and a schedule failing only under that load is set aside).
    assert!(report.replays_failed > 0, "{report}");
    assert!(
        report.to_string().contains("INFORMER_CHAOS_SEED="),
        "{report}"
    );
    // The shrunk schedule, run as a written scenario (what a regression test pastes), fails
    // the same way. Runs are timed by the clock: on a loaded machine the schedule shrinking
    // found may fail one run in several (its replays above needed `report.replays`), so it
    // is run until it fails, for up to a minute (a run takes a fraction of a second).
    let mut replayed = None;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        let again = mirror_test(true)
            .name("mirror scenario")
            .shrinking(0, 1)
            .scenario(report.shrunk.iter().map(|(_, step)| step.clone()))
            .check()
            .await;
        if let Err(again) = again {
            replayed = Some(again);
            break;
        }
    }
    let replayed = replayed.unwrap_or_else(|| {
        panic!("the shrunk schedule never failed again as a scenario in a minute: {report}")
    });
    assert!(replayed.scenario, "{replayed}");
    assert!(replayed.failure.same_kind(&report.failure), "{replayed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_correct_kube_rs_controller_passes_a_written_scenario() {
    let alpha = source("alpha", "a");
    let summary = mirror_test(false)
        .name("mirror scenario")
        .scenario([
            Step::World(WorldStep::create(&alpha)),
            Step::Crash {
                after_writes: 1,
                down_steps: 1,
            },
            Step::World(WorldStep::set(&alpha, "/data/mode", "b")),
            Step::FailRequests {
                class: RequestClass::Writes,
                code: 500,
                count: 2,
            },
            Step::DropWatches { compact: true },
            Step::Wait(Duration::from_millis(50)),
            Step::World(WorldStep::recreate(source("alpha", "c"))),
            Step::Settle,
        ])
        .check()
        .await
        .unwrap_or_else(|report| panic!("{report}"));
    assert!(summary.scenario);
    assert!(summary.seeds.is_empty());
    assert!(
        summary.to_string().contains("its scenario passed"),
        "{summary}"
    );
    assert!(summary.steps.contains(&("crash", 1)), "{summary:?}");
}

/// Writes a new value into the mirror of `alpha` every 20 ms, forever: the world never
/// becomes quiet although nothing changes it.
async fn fidget(
    client: kube::Client,
    stop: tokio_util::sync::CancellationToken,
) -> Result<(), kube::Error> {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, Patch, PatchParams};
    let api: Api<ConfigMap> = Api::namespaced(client, mirror::NAMESPACE);
    let mut n = 0u64;
    while !stop.is_cancelled() {
        n += 1;
        let patch =
            Patch::Merge(serde_json::json!({"metadata": {"annotations": {"tick": n.to_string()}}}));
        // Absent until the world creates it; errors are retried at the next tick.
        let _ = api.patch("alpha", &PatchParams::default(), &patch).await;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_that_never_stops_writing_thrashes() {
    let report = Chaos::new(fidget)
        .name("fidget")
        .world(World::generated([source("alpha", "a")]))
        .faults([])
        .seeds(1)
        .shrinking(6, 1)
        .check()
        .await
        .expect_err("it never becomes quiet");
    assert!(
        matches!(&report.failure, Failure::Thrash { writes, last } if *writes > 40 && !last.is_empty()),
        "{report}"
    );
}

/// Sets `alpha`'s mode to "b" and back to "a" every 20 ms, forever: the world leaves the
/// expected state (mode "a") and comes back to it, and never becomes quiet.
async fn flap(
    client: kube::Client,
    stop: tokio_util::sync::CancellationToken,
) -> Result<(), kube::Error> {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, Patch, PatchParams};
    let api: Api<ConfigMap> = Api::namespaced(client, mirror::NAMESPACE);
    for mode in ["b", "a"].into_iter().cycle() {
        if stop.is_cancelled() {
            break;
        }
        let patch = Patch::Merge(serde_json::json!({"data": {"mode": mode}}));
        // Absent until the world creates it; errors are retried at the next tick.
        let _ = api.patch("alpha", &PatchParams::default(), &patch).await;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Whether `alpha` has mode "a".
fn alpha_in_mode_a(cluster: &informer_testing::chaos::Cluster) -> Result<(), String> {
    use k8s_openapi::api::core::v1::ConfigMap;
    let alpha = cluster
        .list::<ConfigMap>()
        .into_iter()
        .find(|cm| cm.metadata.name.as_deref() == Some("alpha"));
    let mode = alpha.and_then(|cm| cm.data?.get("mode").cloned());
    match mode.as_deref() {
        Some("a") => Ok(()),
        other => Err(format!("alpha has mode {other:?}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_flapping_out_of_the_expected_state_and_back_thrashes_counting_every_write() {
    let report = Chaos::new(flap)
        .name("flap")
        .world(World::generated([source("alpha", "a")]))
        .converges(alpha_in_mode_a)
        .faults([])
        .seeds(1)
        .shrinking(0, 1)
        .check()
        .await
        .expect_err("it never becomes quiet");
    // The writes are counted from when the expected state was first reached, not from its
    // last return to it.
    assert!(
        matches!(&report.failure, Failure::Thrash { writes, .. } if *writes > 20),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_that_returns_while_it_should_run_fails() {
    let report = Chaos::new(|_client, _stop| async { Err::<(), _>("no informers to run") })
        .name("quitter")
        .world(World::generated([source("alpha", "a")]))
        .faults([])
        .seeds(1)
        .shrinking(4, 1)
        .check()
        .await
        .expect_err("it exits");
    match &report.failure {
        Failure::ControllerExited { user, outcome } => {
            assert_eq!(user, "replica-0.1");
            assert_eq!(outcome, "returned an error: no informers to run");
        }
        other => panic!("{other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_world_step_under_status_writes_the_status_subresource() {
    // A main-resource write ignores `status` on a type with a status subresource, so a
    // `/status/...` step must go through the subresource to take effect.
    let web = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": mirror::NAMESPACE},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    });
    Chaos::new(
        |_client, stop: tokio_util::sync::CancellationToken| async move {
            stop.cancelled().await;
            Ok::<(), kube::Error>(())
        },
    )
    .name("status step")
    .faults([])
    .scenario([
        Step::World(WorldStep::create(&web)),
        Step::World(WorldStep::set(&web, "/status/readyReplicas", 2)),
        Step::World(WorldStep::set(&web, "/spec/replicas", 3)),
        Step::Settle,
    ])
    .converges(|cluster| {
        let web = cluster
            .get_json("apps/v1", "Deployment", Some(mirror::NAMESPACE), "web")
            .ok_or("the Deployment is gone")?;
        let ready = web.pointer("/status/readyReplicas").cloned();
        let replicas = web.pointer("/spec/replicas").cloned();
        if ready == Some(2.into()) && replicas == Some(3.into()) {
            Ok(())
        } else {
            Err(format!(
                "status.readyReplicas {ready:?}, spec.replicas {replicas:?}"
            ))
        }
    })
    .check()
    .await
    .unwrap_or_else(|report| panic!("{report}"));
}

/// The incarnations that started in a run, as they named themselves.
type Started = parking_lot::Mutex<Vec<String>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_state_is_one_per_run_and_outlives_the_controllers_crashes() {
    // Each incarnation records itself in the run's outside state: runs going on at once must
    // not see each other's, and a crash must not reset it.
    Chaos::replicated(1, |client, stop, identity| {
        chaos::outside::<Started>().lock().push(identity);
        mirror::run(client, stop, false)
    })
    .name("outside state")
    .world(World::generated([source("alpha", "a")]).mutate("/data/mode", ["a", "b"]))
    .faults([FaultKind::Crash])
    .seeds(8)
    .concurrency(4)
    .converges(|cluster: &Cluster| {
        mirror::mirrored(cluster)?;
        let started = cluster.outside::<Started>().lock().clone();
        let expected: Vec<String> = (1..=started.len())
            .map(|n| format!("replica-0.{n}"))
            .collect();
        match started == expected {
            true => Ok(()),
            false => Err(format!("this run's incarnations are {started:?}")),
        }
    })
    .run()
    .await;
}

#[test]
#[should_panic(expected = "in a check, read Cluster::outside")]
fn outside_state_outside_a_run_says_where_it_is_read() {
    let _ = chaos::outside::<Started>();
}

/// What a fake outside system saw of its run.
#[derive(Default)]
struct Seen {
    seed: parking_lot::Mutex<Option<Option<u64>>>,
    schedule_over: std::sync::atomic::AtomicBool,
}

/// The mirror controller beside a fake that notes itself in the trace, records the run's
/// seed and watches for the schedule's end, as a fake provider that fails on its own would.
fn with_a_fake(
    client: kube::Client,
    stop: tokio_util::sync::CancellationToken,
) -> impl Future<Output = Result<(), kube::Error>> {
    let run = chaos::run_context();
    let seen = chaos::outside::<Seen>();
    *seen.seed.lock() = Some(run.seed());
    run.note("provider", "serving");
    tokio::spawn(async move {
        while run.in_schedule() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        run.note("provider", "faults over");
        seen.schedule_over
            .store(true, std::sync::atomic::Ordering::SeqCst);
    });
    mirror::run(client, stop, false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fake_outside_system_knows_the_seed_and_when_the_schedule_is_over() {
    Chaos::new(with_a_fake)
        .name("fake provider")
        .world(World::generated([source("alpha", "a")]))
        .seeds(2)
        .converges(|cluster: &Cluster| {
            mirror::mirrored(cluster)?;
            let seen = cluster.outside::<Seen>();
            let seed = *seen.seed.lock();
            if !matches!(seed, Some(Some(0 | 1))) {
                return Err(format!("the fake saw seed {seed:?}"));
            }
            match seen.schedule_over.load(std::sync::atomic::Ordering::SeqCst) {
                true => Ok(()),
                false => Err("the fake still thinks faults are on".into()),
            }
        })
        .run()
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fake_outside_systems_notes_are_in_the_report_of_a_failing_run() {
    let report = Chaos::new(with_a_fake)
        .name("fake provider, failing")
        .scenario([Step::World(WorldStep::create(source("alpha", "a")))])
        .converge_within(Duration::from_secs(2))
        .shrinking(1, 1)
        .converges(|_: &Cluster| Err("never".to_string()))
        .check()
        .await
        .expect_err("it never converges");
    let noted: Vec<&str> = report
        .trace
        .iter()
        .filter(|event| event.who == "provider")
        .map(|event| event.what.as_str())
        .collect();
    assert_eq!(noted, ["serving", "faults over"], "{report}");
}
