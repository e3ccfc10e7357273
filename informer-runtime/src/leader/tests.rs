//! The election loop against the in-memory fake, under paused tokio time, so every
//! timing rule is checked exactly.

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

use super::{LeaderElectionConfig, LeaderElector, LeaderState};
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
    assert!(
        waited <= LEASE + RETRY.mul_f64(1.2),
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

    // The checker: at every step of simulated time, at most one live term.
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
