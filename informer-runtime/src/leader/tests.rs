//! The election loop against the in-memory fake, under paused tokio time, so every
//! timing rule is checked exactly.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{HealthzAdaptor, LeaderCheckError, LeaderElectionConfig, LeaderElector, LeaderState};
use crate::lease::api::LeaseApi;
use crate::lease::fake::{FakeLeases, Partition};
use crate::lease::record::LeaseRecord;

const LEASE: Duration = Duration::from_secs(15);
const RENEW: Duration = Duration::from_secs(10);
const RETRY: Duration = Duration::from_secs(2);

fn elector(api: Arc<dyn LeaseApi>, id: &str) -> LeaderElector {
    let config = LeaderElectionConfig::new("lock", "default", id);
    LeaderElector::with_api(api, config).unwrap()
}

struct Running {
    elector: LeaderElector,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

fn start(elector: &LeaderElector) -> Running {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let elector = elector.clone();
        let cancel = cancel.clone();
        async move { elector.run(cancel).await }
    });
    Running {
        elector: elector.clone(),
        cancel,
        task,
    }
}

async fn leading(elector: &LeaderElector) -> CancellationToken {
    let mut states = elector.subscribe();
    loop {
        if let LeaderState::Leading { term } = &*states.borrow_and_update()
            && !term.is_cancelled()
        {
            return term.clone();
        }
        states.changed().await.unwrap();
    }
}

fn record(store: &FakeLeases) -> LeaseRecord {
    LeaseRecord::from_lease(&store.lease("lock").expect("the lease exists"))
}

fn lease_with(record: &LeaseRecord) -> Lease {
    let mut spec = LeaseSpec::default();
    record.write_to(&mut spec);
    Lease {
        metadata: ObjectMeta {
            name: Some("lock".into()),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
    }
}

/// Waits (in paused time) until the store has seen one more successful write, and
/// returns when that write happened.
async fn next_write(store: &FakeLeases) -> Instant {
    let before = store.writes.load(Ordering::SeqCst);
    while store.writes.load(Ordering::SeqCst) == before {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    store.last_write.lock().expect("a write happened")
}

#[tokio::test(start_paused = true)]
async fn first_candidate_creates_the_lease_and_leads() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let _run = start(&a);
    let term = leading(&a).await;
    assert!(!term.is_cancelled());
    assert!(a.is_leader());
    let r = record(&store);
    assert_eq!(r.holder, "a");
    assert_eq!(r.lease_duration_seconds, 15);
    assert_eq!(r.transitions, 0);
    assert!(r.acquire_time.is_some() && r.renew_time.is_some());
}

#[tokio::test(start_paused = true)]
async fn leader_renews_every_retry_period() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let _run = start(&a);
    leading(&a).await;
    let t0 = next_write(&store).await;
    let t1 = next_write(&store).await;
    let t2 = next_write(&store).await;
    assert_eq!(t1 - t0, RETRY);
    assert_eq!(t2 - t1, RETRY);
    assert_eq!(
        record(&store).transitions,
        0,
        "renewals are not transitions"
    );
}

#[tokio::test(start_paused = true)]
async fn leader_steps_down_at_the_renew_deadline_when_renewals_fail() {
    let store = FakeLeases::new();
    let link = Partition::new(&store);
    let a = elector(link.clone(), "a");
    let _run = start(&a);
    let term = leading(&a).await;
    let renewed = next_write(&store).await;
    link.fail.store(true, Ordering::SeqCst);
    term.cancelled().await;
    assert_eq!(
        Instant::now() - renewed,
        RENEW,
        "steps down exactly at the deadline"
    );
    assert!(
        Instant::now() - renewed < LEASE,
        "before anyone may take over"
    );
    assert!(!a.is_leader());
    assert!(matches!(
        &*a.subscribe().borrow(),
        LeaderState::Standby { holder: Some(h) } if h == "a"
    ));
}

#[tokio::test(start_paused = true)]
async fn stalled_renewal_is_abandoned_at_the_renew_deadline() {
    let store = FakeLeases::new();
    let link = Partition::new(&store);
    let a = elector(link.clone(), "a");
    let _run = start(&a);
    let term = leading(&a).await;
    let renewed = next_write(&store).await;
    *link.delay_request.lock() = Some(Duration::from_secs(3600));
    term.cancelled().await;
    assert_eq!(Instant::now() - renewed, RENEW);
}

#[tokio::test(start_paused = true)]
async fn leader_that_recovers_before_the_deadline_keeps_its_term() {
    let store = FakeLeases::new();
    let link = Partition::new(&store);
    let a = elector(link.clone(), "a");
    let _run = start(&a);
    let term = leading(&a).await;
    next_write(&store).await;
    link.fail.store(true, Ordering::SeqCst);
    tokio::time::sleep(RENEW - RETRY - Duration::from_millis(500)).await;
    link.heal();
    tokio::time::sleep(LEASE * 2).await;
    assert!(
        !term.is_cancelled(),
        "a renewal before the deadline keeps the term"
    );
    assert!(a.is_leader());
}

#[tokio::test(start_paused = true)]
async fn standby_waits_a_full_lease_duration_from_its_own_observation() {
    let store = FakeLeases::new();
    // Held by a crashed replica whose remote renewTime is an hour old: only the
    // local observation counts, so the standby still waits a full lease duration.
    let hour_ago = Timestamp::now() - Duration::from_secs(3600);
    store.put(lease_with(&LeaseRecord::created("ghost", 15, hour_ago)));
    let b = elector(store.clone(), "b");
    let t0 = Instant::now();
    let _run = start(&b);
    leading(&b).await;
    let waited = Instant::now() - t0;
    assert!(waited >= LEASE, "took over after {waited:?}");
    // Its first attempt observes the record at once; it takes over at its first attempt
    // after a lease duration, at most one standby wait (1 to 2.2 retry periods) later.
    assert!(
        waited <= LEASE + RETRY.mul_f64(1.0 + super::elector::STANDBY_JITTER),
        "took over after {waited:?}"
    );
    let r = record(&store);
    assert_eq!((r.holder.as_str(), r.transitions), ("b", 1));
}

#[tokio::test(start_paused = true)]
async fn a_renewing_holder_keeps_standbys_out_indefinitely() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let _a = start(&a);
    let a_term = leading(&a).await;
    let b = elector(store.clone(), "b");
    let _b = start(&b);
    tokio::time::sleep(LEASE * 10).await;
    assert!(!b.is_leader());
    assert!(!a_term.is_cancelled());
    assert_eq!(b.subscribe().borrow().holder(), Some("a"));
}

#[tokio::test(start_paused = true)]
async fn free_lease_is_taken_without_waiting() {
    let store = FakeLeases::new();
    let released = LeaseRecord::created("old", 15, Timestamp::now()).released(Timestamp::now());
    store.put(lease_with(&released));
    let b = elector(store.clone(), "b");
    let t0 = Instant::now();
    let _run = start(&b);
    leading(&b).await;
    assert_eq!(Instant::now() - t0, Duration::ZERO);
    assert_eq!(record(&store).transitions, 1);
}

#[tokio::test(start_paused = true)]
async fn a_lost_lease_ends_the_term_at_the_next_renewal() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let _run = start(&a);
    let term = leading(&a).await;
    let renewed = next_write(&store).await;
    // Someone overwrites the lease (e.g. an operator forcing a holder).
    store.put(lease_with(&LeaseRecord::created(
        "intruder",
        15,
        Timestamp::now(),
    )));
    term.cancelled().await;
    assert_eq!(
        Instant::now() - renewed,
        RETRY,
        "at the next renewal, not the deadline"
    );
    assert_eq!(a.subscribe().borrow().holder(), Some("intruder"));
}

#[tokio::test(start_paused = true)]
async fn cancel_ends_the_term_then_releases_the_lease() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let run = start(&a);
    let term = leading(&a).await;
    run.cancel.cancel();
    assert!(
        term.is_cancelled(),
        "the term is a child of the run's token"
    );
    assert!(!a.is_leader());
    run.task.await.unwrap();
    let r = record(&store);
    assert!(r.holder.is_empty(), "released");
    assert_eq!(r.lease_duration_seconds, 1);
    assert_eq!(r.transitions, 0);
    // Another candidate takes it at once.
    let b = elector(store.clone(), "b");
    let t0 = Instant::now();
    let _b = start(&b);
    leading(&b).await;
    assert_eq!(Instant::now() - t0, Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn without_release_on_cancel_the_lease_is_left_to_expire() {
    let store = FakeLeases::new();
    let mut config = LeaderElectionConfig::new("lock", "default", "a");
    config.release_on_cancel = false;
    let a = LeaderElector::with_api(store.clone(), config).unwrap();
    let run = start(&a);
    leading(&a).await;
    run.cancel.cancel();
    run.task.await.unwrap();
    assert_eq!(record(&store).holder, "a");
}

#[tokio::test(start_paused = true)]
async fn aborting_run_cancels_the_term_without_writing() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let run = start(&a);
    let term = leading(&a).await;
    run.task.abort();
    let _ = run.task.await;
    assert!(term.is_cancelled());
    assert!(!a.is_leader());
    assert_eq!(
        record(&store).holder,
        "a",
        "nothing written: the lease expires"
    );
    drop(run.elector);
}

#[tokio::test(start_paused = true)]
async fn a_second_concurrent_run_returns_at_once() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let _run = start(&a);
    leading(&a).await;
    let cancel = CancellationToken::new();
    tokio::time::timeout(Duration::from_millis(1), a.run(cancel))
        .await
        .expect("returns at once");
    assert!(a.is_leader(), "the first run is unaffected");
}

#[tokio::test(start_paused = true)]
async fn run_can_be_restarted_after_it_returned() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let run = start(&a);
    leading(&a).await;
    run.cancel.cancel();
    run.task.await.unwrap();
    let _again = start(&a);
    leading(&a).await;
    assert_eq!(
        record(&store).transitions,
        1,
        "released, then acquired again"
    );
}

#[tokio::test(start_paused = true)]
async fn restarted_replica_with_the_same_identity_resumes_at_once() {
    // client-go's rule: a record naming us is ours (same pod name after a restart).
    let store = FakeLeases::new();
    let first = elector(store.clone(), "a");
    let run = start(&first);
    leading(&first).await;
    run.task.abort();
    let _ = run.task.await;
    let second = elector(store.clone(), "a");
    let t0 = Instant::now();
    let _run = start(&second);
    leading(&second).await;
    assert_eq!(Instant::now() - t0, Duration::ZERO);
    assert_eq!(record(&store).transitions, 0, "same holder: no transition");
}

#[test]
fn invalid_config_is_rejected() {
    let store = FakeLeases::new();
    let config = LeaderElectionConfig::new("lock", "default", "a").with_timings(
        Duration::from_secs(10),
        Duration::from_secs(10),
        Duration::from_secs(2),
    );
    assert!(LeaderElector::with_api(store.clone(), config).is_err());
    let config = LeaderElectionConfig::new("lock", "default", "a").with_timings(
        Duration::from_secs(15),
        Duration::from_millis(2400),
        Duration::from_secs(2),
    );
    assert!(
        LeaderElector::with_api(store.clone(), config).is_err(),
        "renew ≤ 1.2 × retry"
    );
    let config = LeaderElectionConfig::new("lock", "default", "a").with_timings(
        Duration::from_secs(15),
        Duration::from_secs(10),
        Duration::ZERO,
    );
    assert!(LeaderElector::with_api(store.clone(), config).is_err());
    for (name, ns, id) in [("", "d", "a"), ("l", "", "a"), ("l", "d", "")] {
        let config = LeaderElectionConfig::new(name, ns, id);
        assert!(LeaderElector::with_api(store.clone(), config).is_err());
    }
}

#[tokio::test(start_paused = true)]
async fn never_two_leaders_under_partitions_stalls_lost_responses_and_crashes() {
    let store = FakeLeases::new();
    let ids = ["a", "b", "c"];
    let links: Vec<Arc<Partition>> = ids.iter().map(|_| Partition::new(&store)).collect();
    let electors: Vec<LeaderElector> = ids
        .iter()
        .zip(&links)
        .map(|(id, link)| elector(link.clone(), id))
        .collect();
    let mut runs: Vec<Running> = electors.iter().map(start).collect();

    // The checker: at every step of simulated time, at most one live term, and no running
    // loop ever fails its liveness check, even with no tolerance.
    let checker = tokio::spawn({
        let electors = electors.clone();
        async move {
            let mut steps = 0u64;
            loop {
                let leaders = electors.iter().filter(|e| e.is_leader()).count();
                assert!(
                    leaders <= 1,
                    "{leaders} leaders at once after {steps} steps"
                );
                for e in &electors {
                    if let Err(err) = e.check(Duration::ZERO) {
                        panic!("a running loop failed its check after {steps} steps: {err:?}");
                    }
                }
                steps += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    });

    let mut rng = StdRng::seed_from_u64(0x5eed);
    let mut terms = 0;
    let end = Instant::now() + Duration::from_secs(900);
    while Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..5000))).await;
        let i = rng.random_range(0..3usize);
        let link = &links[i];
        match rng.random_range(0..7) {
            0 => link.fail.store(true, Ordering::SeqCst),
            1 => {
                *link.delay_request.lock() =
                    Some(Duration::from_millis(rng.random_range(0..20_000)))
            }
            2 => {
                *link.delay_response.lock() =
                    Some(Duration::from_millis(rng.random_range(0..20_000)))
            }
            3 => {
                // Crash and restart.
                runs[i].task.abort();
                let _ = (&mut runs[i].task).await;
                runs[i] = start(&electors[i]);
            }
            4 => {
                // Clean restart.
                runs[i].cancel.cancel();
                let _ = tokio::time::timeout(RENEW * 3, &mut runs[i].task).await;
                runs[i] = start(&electors[i]);
            }
            _ => link.heal(),
        }
        if electors.iter().any(LeaderElector::is_leader) {
            terms += 1;
        }
    }
    // Heal everything: someone leads again within lease + renew deadline + a retry.
    for link in &links {
        link.heal();
    }
    let healed = Instant::now();
    tokio::time::sleep(RENEW + RETRY * 2).await; // delayed requests in flight drain
    let waited = tokio::time::timeout(LEASE + RETRY * 2, async {
        while !electors.iter().any(LeaderElector::is_leader) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "nobody leads {:?} after healing",
        Instant::now() - healed
    );
    assert!(terms > 10, "the chaos saw leaders only {terms} times");
    assert!(!checker.is_finished(), "the checker failed");
    checker.abort();
}

#[tokio::test]
async fn for_client_takes_the_clients_namespace_and_a_unique_identity_per_process() {
    let mut config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
    config.default_namespace = "ops".into();
    let client = kube::Client::try_from(config).unwrap();
    let a = LeaderElectionConfig::for_client("lock", &client);
    let b = LeaderElectionConfig::for_client("lock", &client);
    assert_eq!(
        (a.lease_name.as_str(), a.namespace.as_str()),
        ("lock", "ops")
    );
    let (host, suffix) = a.identity.rsplit_once('_').expect("host_suffix");
    assert!(!host.is_empty() && suffix.len() == 16, "{}", a.identity);
    assert_ne!(
        a.identity, b.identity,
        "two electors of one host never share an identity"
    );
    assert!(a.validate().is_ok());
}

// ---------------------------------------------------------------------------------------
// The liveness check (`LeaderElector::check`, `HealthzAdaptor`)
// ---------------------------------------------------------------------------------------

/// kube-controller-manager's tolerance.
const TOLERANCE: Duration = Duration::from_secs(20);

/// Polls the election loop `run` only while `meanwhile` runs. Afterwards nothing polls it:
/// it stays alive, but is stuck, as a loop behind a blocked thread would be.
async fn poll_while<T>(
    run: Pin<&mut (impl Future<Output = ()> + ?Sized)>,
    meanwhile: impl Future<Output = T>,
) -> T {
    tokio::select! {
        biased;
        out = meanwhile => out,
        () = run => panic!("the election loop returned"),
    }
}

/// Leads with `elector` on `store`, renews twice, then stalls the loop. Returns the stalled
/// loop and when its last renewal succeeded.
async fn stalled_leader<'a>(
    elector: &'a LeaderElector,
    store: &FakeLeases,
) -> (Pin<Box<dyn Future<Output = ()> + Send + 'a>>, Instant) {
    let mut run: Pin<Box<dyn Future<Output = ()> + Send + 'a>> =
        Box::pin(elector.run(CancellationToken::new()));
    poll_while(run.as_mut(), leading(elector)).await;
    poll_while(run.as_mut(), tokio::time::sleep(RETRY * 2 + RETRY / 2)).await;
    assert_eq!(
        store.writes.load(Ordering::SeqCst),
        3,
        "created, then renewed twice"
    );
    let renewed = store.last_write.lock().expect("renewed");
    (run, renewed)
}

#[tokio::test(start_paused = true)]
async fn check_fails_once_a_stuck_leader_goes_past_lease_duration_plus_tolerance() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let (_stalled, renewed) = stalled_leader(&a, &store).await;
    tokio::time::advance(renewed + LEASE + TOLERANCE - Instant::now()).await;
    assert!(a.is_leader(), "a stuck loop never cancels its term");
    assert_eq!(a.check(TOLERANCE), Ok(()), "exactly at the limit: passes");
    tokio::time::advance(Duration::from_millis(1)).await;
    let error = a.check(TOLERANCE).expect_err("past the limit");
    assert_eq!(
        error,
        LeaderCheckError {
            lease_name: "lock".into(),
            since_renewal: LEASE + TOLERANCE + Duration::from_millis(1),
            limit: LEASE + TOLERANCE,
        }
    );
    assert_eq!(
        error.to_string(),
        "failed election to renew leadership on lease lock"
    );
}

#[tokio::test(start_paused = true)]
async fn check_tolerance_moves_the_limit_past_the_lease_duration() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let (_stalled, renewed) = stalled_leader(&a, &store).await;
    tokio::time::advance(renewed + LEASE + Duration::from_secs(1) - Instant::now()).await;
    assert!(
        a.check(Duration::ZERO).is_err(),
        "no tolerance: the lease duration"
    );
    assert!(a.check(Duration::from_secs(1)).is_ok());
    assert!(a.check(TOLERANCE).is_ok());
    assert!(
        a.check(Duration::MAX).is_ok(),
        "the limit saturates instead of overflowing"
    );
}

#[tokio::test(start_paused = true)]
async fn check_passes_for_a_leader_that_keeps_renewing() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let _run = start(&a);
    let term = leading(&a).await;
    for _ in 0..20 {
        tokio::time::sleep(LEASE).await;
        assert_eq!(a.check(Duration::ZERO), Ok(()));
    }
    assert!(!term.is_cancelled(), "the same term throughout");
}

#[tokio::test(start_paused = true)]
async fn check_passes_for_a_standby_and_an_elector_that_never_ran() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let _a = start(&a);
    leading(&a).await;
    let b = elector(store.clone(), "b");
    let c = elector(store.clone(), "c");
    let _b = start(&b);
    tokio::time::sleep(LEASE * 10).await;
    assert!(!b.is_leader(), "a renews: b stands by");
    assert_eq!(b.check(Duration::ZERO), Ok(()), "a standby always passes");
    assert_eq!(c.check(Duration::ZERO), Ok(()), "never ran");
}

#[tokio::test(start_paused = true)]
async fn check_fails_for_a_stuck_leader_that_another_replica_took_over_from() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let (_stalled, renewed) = stalled_leader(&a, &store).await;
    let b = elector(store.clone(), "b");
    let _b = start(&b);
    leading(&b).await;
    assert!(Instant::now() - renewed >= LEASE, "b waited for a's lease");
    tokio::time::sleep_until(renewed + LEASE + TOLERANCE + Duration::from_millis(1)).await;
    assert!(a.is_leader() && b.is_leader(), "a still believes it leads");
    assert!(a.check(TOLERANCE).is_err(), "the stuck one fails");
    assert_eq!(b.check(Duration::ZERO), Ok(()), "the new leader renews");
}

#[tokio::test(start_paused = true)]
async fn check_passes_once_a_leader_whose_renewals_fail_has_stepped_down() {
    let store = FakeLeases::new();
    let link = Partition::new(&store);
    let a = elector(link.clone(), "a");
    let _run = start(&a);
    let term = leading(&a).await;
    link.fail.store(true, Ordering::SeqCst);
    term.cancelled().await;
    tokio::time::sleep(LEASE * 10).await;
    assert!(!a.is_leader());
    assert_eq!(a.check(Duration::ZERO), Ok(()));
}

#[tokio::test(start_paused = true)]
async fn check_passes_once_the_loop_returned_or_was_dropped() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let (stalled, _renewed) = stalled_leader(&a, &store).await;
    tokio::time::sleep(LEASE * 10).await;
    assert!(a.check(TOLERANCE).is_err());
    drop(stalled);
    assert!(!a.is_leader(), "dropping the loop ended the term");
    assert_eq!(a.check(Duration::ZERO), Ok(()), "dropped");

    let b = elector(FakeLeases::new(), "b");
    let run = start(&b);
    leading(&b).await;
    run.cancel.cancel();
    run.task.await.unwrap();
    tokio::time::sleep(LEASE * 10).await;
    assert_eq!(b.check(Duration::ZERO), Ok(()), "returned");
}

#[tokio::test(start_paused = true)]
async fn healthz_adaptor_passes_without_an_elector_then_checks_the_one_set() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let (_stalled, _renewed) = stalled_leader(&a, &store).await;
    tokio::time::sleep(LEASE + TOLERANCE * 2).await;
    let adaptor = HealthzAdaptor::new(TOLERANCE);
    assert_eq!(HealthzAdaptor::NAME, "leaderElection");
    assert_eq!(adaptor.check(), Ok(()), "no elector yet");
    let registered = adaptor.clone();
    adaptor.set_leader_elector(a.clone());
    let error = registered.check().expect_err("clones share the elector");
    assert_eq!(
        error.to_string(),
        "failed election to renew leadership on lease lock"
    );
    let lenient = HealthzAdaptor::new(TOLERANCE * 3);
    lenient.set_leader_elector(a.clone());
    assert_eq!(lenient.check(), Ok(()), "its own tolerance");
    adaptor.set_leader_elector(elector(store.clone(), "b"));
    assert_eq!(registered.check(), Ok(()), "replaced by a non-leader");
}

// ----- `leader()`: client-go's `GetLeader` -----

#[tokio::test(start_paused = true)]
async fn leader_is_unknown_before_any_record_is_read() {
    let store = FakeLeases::new();
    store.put(lease_with(&LeaseRecord::created("a", 15, Timestamp::now())));
    let b = elector(store.clone(), "b");
    assert_eq!(b.leader(), None, "not run: nothing observed");
}

#[tokio::test(start_paused = true)]
async fn leader_is_this_replica_while_it_leads_and_the_holder_for_a_standby() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let _a = start(&a);
    leading(&a).await;
    assert_eq!(a.leader().as_deref(), Some("a"));
    let b = elector(store.clone(), "b");
    let _b = start(&b);
    tokio::time::sleep(RETRY).await;
    assert!(!b.is_leader());
    assert_eq!(b.leader().as_deref(), Some("a"));
}

#[tokio::test(start_paused = true)]
async fn leader_of_a_standby_is_the_holder_of_an_expired_record_until_it_takes_over() {
    let store = FakeLeases::new();
    let hour_ago = Timestamp::now() - Duration::from_secs(3600);
    store.put(lease_with(&LeaseRecord::created("ghost", 15, hour_ago)));
    let b = elector(store.clone(), "b");
    let _run = start(&b);
    tokio::time::sleep(LEASE - RETRY).await;
    assert_eq!(b.leader().as_deref(), Some("ghost"), "no liveness judged");
    leading(&b).await;
    assert_eq!(b.leader().as_deref(), Some("b"));
}

#[tokio::test(start_paused = true)]
async fn leader_follows_a_lease_lost_to_another_holder() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let _run = start(&a);
    let term = leading(&a).await;
    store.put(lease_with(&LeaseRecord::created(
        "intruder",
        15,
        Timestamp::now(),
    )));
    term.cancelled().await;
    assert_eq!(a.leader().as_deref(), Some("intruder"));
}

#[tokio::test(start_paused = true)]
async fn leader_is_none_once_the_lease_is_released_and_kept_when_it_is_not() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let run = start(&a);
    leading(&a).await;
    run.cancel.cancel();
    run.task.await.unwrap();
    assert_eq!(a.leader(), None, "the released record names no holder");

    let store = FakeLeases::new();
    let mut config = LeaderElectionConfig::new("lock", "default", "a");
    config.release_on_cancel = false;
    let a = LeaderElector::with_api(store.clone(), config).unwrap();
    let run = start(&a);
    leading(&a).await;
    run.cancel.cancel();
    run.task.await.unwrap();
    assert!(!a.is_leader());
    assert_eq!(
        a.leader().as_deref(),
        Some("a"),
        "the record it last saw still names it"
    );
}
