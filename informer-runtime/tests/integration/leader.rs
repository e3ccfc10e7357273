//! Leader election (`informer_runtime::leader`) through a real `kube::Client` against the
//! in-process API server. Short timings (lease 1 s, renew deadline 700 ms, retry 100 ms)
//! keep the tests fast; the "within" bounds are generous for a loaded machine, the safety
//! checks are strict.

use std::sync::Arc;
use std::time::Duration;

use informer_runtime::leader::{
    CancellationToken, LeaderElectionConfig, LeaderElector, LeaderState,
};
use informer_testing::{FailureCode, RequestMatch, TestApiServer, Verb};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio::time::Instant;

const LEASE: Duration = Duration::from_millis(1000);
const RENEW: Duration = Duration::from_millis(700);
const RETRY: Duration = Duration::from_millis(100);
/// Scheduling slack for "within" bounds on a loaded 2-core machine.
const SLACK: Duration = Duration::from_millis(2500);

async fn server() -> TestApiServer {
    TestApiServer::start()
        .await
        .expect("the test API server starts")
}

fn config(id: &str) -> LeaderElectionConfig {
    LeaderElectionConfig::new("lock", "default", id).with_timings(LEASE, RENEW, RETRY)
}

struct Candidate {
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

fn start(elector: &LeaderElector) -> Candidate {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let elector = elector.clone();
        let cancel = cancel.clone();
        async move { elector.run(cancel).await }
    });
    Candidate { cancel, task }
}

impl Candidate {
    /// Kills the candidate as a crash would: no release is written.
    async fn kill(self) -> Instant {
        self.task.abort();
        let _ = self.task.await;
        Instant::now()
    }
}

/// Every term any elector ever started, and the safety checks run on each of them.
#[derive(Clone, Default)]
struct Timeline {
    terms: Arc<Mutex<Vec<(usize, CancellationToken, Instant)>>>,
}

impl Timeline {
    /// Watches `elector` (number `index`): whenever it starts a term, every other term
    /// seen so far must already be cancelled.
    fn watch(&self, index: usize, elector: &LeaderElector) -> JoinHandle<()> {
        let terms = self.terms.clone();
        let mut states = elector.subscribe();
        tokio::spawn(async move {
            loop {
                let state = states.borrow_and_update().clone();
                if let LeaderState::Leading { term } = state {
                    let mut terms = terms.lock();
                    let known = terms.iter().any(|(_, t, _)| t == &term);
                    // A term already cancelled when seen overlaps with nothing now.
                    if !known && !term.is_cancelled() {
                        for (other, t, _) in terms.iter() {
                            assert!(
                                t.is_cancelled(),
                                "elector {index} started a term while a term of elector {other} was live"
                            );
                        }
                        terms.push((index, term, Instant::now()));
                    }
                }
                if states.changed().await.is_err() {
                    return;
                }
            }
        })
    }

    fn count(&self) -> usize {
        self.terms.lock().len()
    }

    /// When the first term started after `after`, and by whom.
    fn first_term_after(&self, after: Instant) -> Option<(usize, Instant)> {
        self.terms
            .lock()
            .iter()
            .filter(|(_, _, at)| *at > after)
            .map(|(i, _, at)| (*i, *at))
            .min_by_key(|(_, at)| *at)
    }

    /// [`first_term_after`](Self::first_term_after), waiting up to 2 s for it: a watcher
    /// records a term when its task next runs, which may be just after a poll of
    /// `is_leader` saw the new leader.
    async fn recorded_term_after(&self, after: Instant) -> (usize, Instant) {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            if let Some(found) = self.first_term_after(after) {
                return found;
            }
            assert!(Instant::now() < deadline, "no new term recorded");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

/// Samples every millisecond that at most one elector leads.
fn sampler(electors: &[LeaderElector]) -> JoinHandle<()> {
    let electors = electors.to_vec();
    tokio::spawn(async move {
        loop {
            let leaders = electors.iter().filter(|e| e.is_leader()).count();
            assert!(leaders <= 1, "{leaders} leaders at once");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
}

async fn wait_for_leader(electors: &[LeaderElector], within: Duration) -> usize {
    let deadline = Instant::now() + within;
    loop {
        if let Some(i) = electors.iter().position(LeaderElector::is_leader) {
            return i;
        }
        assert!(Instant::now() < deadline, "no leader within {within:?}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn lease(server: &TestApiServer) -> Lease {
    Api::<Lease>::namespaced(server.client(), "default")
        .get("lock")
        .await
        .expect("the lease exists")
}

fn checks_passed(handles: &[JoinHandle<()>]) {
    for h in handles {
        assert!(
            !h.is_finished(),
            "a safety check failed (see the panic above)"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_electors_contending_for_one_lease_never_lead_at_once() {
    let server = server().await;
    let electors: Vec<LeaderElector> = ["a", "b", "c"]
        .iter()
        .map(|id| LeaderElector::new(server.client(), config(id)))
        .collect();
    let timeline = Timeline::default();
    let mut checks: Vec<JoinHandle<()>> = (0..3).map(|i| timeline.watch(i, &electors[i])).collect();
    checks.push(sampler(&electors));
    let mut candidates: Vec<Option<Candidate>> = electors.iter().map(|e| Some(start(e))).collect();

    // Each round ends the current leadership a different way and waits for the next.
    for round in 0..6 {
        let leader = wait_for_leader(&electors, LEASE + RETRY * 2 + SLACK).await;
        // Let the term run for a few renewals.
        tokio::time::sleep(RETRY * 3).await;
        checks_passed(&checks);
        match round % 3 {
            0 => {
                // Crash: abort without releasing, then come back as a candidate.
                candidates[leader].take().unwrap().kill().await;
                candidates[leader] = Some(start(&electors[leader]));
            }
            1 => {
                // Clean shutdown: release, then come back.
                let c = candidates[leader].take().unwrap();
                c.cancel.cancel();
                c.task.await.unwrap();
                candidates[leader] = Some(start(&electors[leader]));
            }
            _ => {
                // A stalled renewal (longer than the renew deadline) deposes the leader.
                let term = electors[leader].subscribe().borrow().term().cloned();
                server.faults().stall_next(
                    RequestMatch::verb(Verb::Update).resource("leases"),
                    1,
                    RENEW + Duration::from_millis(300),
                );
                if let Some(term) = term {
                    tokio::time::timeout(RENEW + RETRY + SLACK, term.cancelled())
                        .await
                        .expect("a stalled leader steps down at its renew deadline");
                }
            }
        }
    }
    wait_for_leader(&electors, LEASE + RETRY * 2 + SLACK).await;
    checks_passed(&checks);
    assert!(timeline.count() >= 6, "saw only {} terms", timeline.count());
    for c in candidates.into_iter().flatten() {
        c.cancel.cancel();
        c.task.await.unwrap();
    }
    checks_passed(&checks);
    for h in checks {
        h.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_within_lease_duration_plus_retry_after_the_leader_is_killed() {
    let server = server().await;
    let electors: Vec<LeaderElector> = ["a", "b", "c"]
        .iter()
        .map(|id| LeaderElector::new(server.client(), config(id)))
        .collect();
    let timeline = Timeline::default();
    let mut checks: Vec<JoinHandle<()>> = (0..3).map(|i| timeline.watch(i, &electors[i])).collect();
    checks.push(sampler(&electors));
    let mut candidates: Vec<Option<Candidate>> = electors.iter().map(|e| Some(start(e))).collect();
    let leader = wait_for_leader(&electors, LEASE + RETRY * 2 + SLACK).await;
    tokio::time::sleep(RETRY * 5).await;
    assert!(electors[leader].is_leader());
    let old_term = electors[leader]
        .subscribe()
        .borrow()
        .term()
        .cloned()
        .unwrap();

    let killed = candidates[leader].take().unwrap().kill().await;
    assert!(old_term.is_cancelled(), "killing the task ends its term");
    let next = wait_for_leader(&electors, LEASE + RETRY * 2 + SLACK).await;
    let took = Instant::now() - killed;
    assert_ne!(next, leader);
    // A standby waits 1 to 2.2 retry periods between attempts (client-go's jitter): it
    // sees the last renewal up to one wait after it, and takes over up to one wait after a
    // lease duration from then.
    assert!(
        took <= LEASE + RETRY.mul_f64(2.0 * 2.2) + SLACK,
        "failover took {took:?}"
    );
    // The killed leader renewed less than a renew deadline before it died, and the others
    // wait a full lease duration from when they saw that renewal: no early takeover.
    assert!(took >= LEASE - RENEW, "took over after only {took:?}");
    let (by, at) = timeline.recorded_term_after(killed).await;
    assert_eq!(by, next);
    assert!(at > killed, "the new term started after the old one ended");
    checks_passed(&checks);
    for h in checks {
        h.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_lease_is_taken_over_at_once() {
    // A long lease, so "at once" is clearly distinguishable from "after expiry", even on
    // a loaded machine.
    let lease_duration = Duration::from_secs(10);
    let server = server().await;
    let electors: Vec<LeaderElector> = ["a", "b", "c"]
        .iter()
        .map(|id| {
            let config = LeaderElectionConfig::new("lock", "default", *id).with_timings(
                lease_duration,
                Duration::from_secs(6),
                RETRY,
            );
            LeaderElector::new(server.client(), config)
        })
        .collect();
    let timeline = Timeline::default();
    let mut checks: Vec<JoinHandle<()>> = (0..3).map(|i| timeline.watch(i, &electors[i])).collect();
    checks.push(sampler(&electors));
    let mut candidates: Vec<Option<Candidate>> = electors.iter().map(|e| Some(start(e))).collect();
    let leader = wait_for_leader(&electors, Duration::from_secs(3)).await;
    tokio::time::sleep(RETRY * 3).await;

    let leaving = candidates[leader].take().unwrap();
    let old_term = electors[leader]
        .subscribe()
        .borrow()
        .term()
        .cloned()
        .unwrap();
    leaving.cancel.cancel();
    let cancelled = Instant::now();
    assert!(
        old_term.is_cancelled(),
        "the term ends the moment run is cancelled"
    );
    leaving.task.await.unwrap();

    let next = wait_for_leader(&electors, lease_duration).await;
    let took = Instant::now() - cancelled;
    assert_ne!(next, leader);
    assert!(
        took < lease_duration - Duration::from_secs(2),
        "takeover took {took:?}: after the lease expired, not at once"
    );
    let (_, at) = timeline.recorded_term_after(cancelled).await;
    assert!(at > cancelled);
    checks_passed(&checks);
    for h in checks {
        h.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_steps_down_when_no_renewal_succeeds_within_the_renew_deadline() {
    let server = server().await;
    let elector = LeaderElector::new(server.client(), config("a"));
    let _candidate = start(&elector);
    wait_for_leader(std::slice::from_ref(&elector), LEASE + SLACK).await;
    let term = elector.subscribe().borrow().term().cloned().unwrap();

    // Every lease request fails from now on.
    server.faults().fail_next(
        RequestMatch::any().resource("leases"),
        usize::MAX,
        FailureCode::InternalError,
    );
    let failing = Instant::now();
    tokio::time::timeout(RENEW + SLACK, term.cancelled())
        .await
        .expect("steps down at the renew deadline");
    let took = Instant::now() - failing;
    assert!(took <= RENEW + RETRY, "stepped down after {took:?}");
    assert!(!elector.is_leader());

    // Once the API server recovers, the record still names us: a new term at once.
    server.faults().clear();
    wait_for_leader(std::slice::from_ref(&elector), RETRY * 2 + SLACK).await;
    let new_term = elector.subscribe().borrow().term().cloned().unwrap();
    assert!(!new_term.is_cancelled());
    assert!(term.is_cancelled(), "a new term has a new token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_record_follows_client_go() {
    let server = server().await;
    let a = LeaderElector::new(server.client(), config("a"));
    let b = LeaderElector::new(server.client(), config("b"));
    let run_a = start(&a);
    wait_for_leader(std::slice::from_ref(&a), LEASE + SLACK).await;
    let first = lease(&server).await.spec.unwrap();
    assert_eq!(first.holder_identity.as_deref(), Some("a"));
    assert_eq!(first.lease_duration_seconds, Some(1));
    assert_eq!(first.lease_transitions, Some(0));
    assert!(first.acquire_time.is_some());

    // Renewals move renewTime only.
    tokio::time::sleep(RETRY * 4).await;
    let renewed = lease(&server).await.spec.unwrap();
    assert_eq!(renewed.acquire_time, first.acquire_time);
    assert_ne!(renewed.renew_time, first.renew_time);
    assert_eq!(renewed.lease_transitions, Some(0));

    // A takeover after a crash: new holder, new acquireTime, one transition.
    let run_b = start(&b);
    run_a.kill().await;
    wait_for_leader(std::slice::from_ref(&b), LEASE + RETRY * 2 + SLACK).await;
    let taken = lease(&server).await.spec.unwrap();
    assert_eq!(taken.holder_identity.as_deref(), Some("b"));
    assert_eq!(taken.lease_transitions, Some(1));
    assert_ne!(taken.acquire_time, first.acquire_time);

    // Release on cancel: no holder, one second, transitions kept.
    run_b.cancel.cancel();
    run_b.task.await.unwrap();
    let released = lease(&server).await.spec.unwrap();
    assert_eq!(released.holder_identity.as_deref(), Some(""));
    assert_eq!(released.lease_duration_seconds, Some(1));
    assert_eq!(released.lease_transitions, Some(1));
    assert!(matches!(
        &*b.subscribe().borrow(),
        LeaderState::Standby { .. }
    ));
}

#[tokio::test]
async fn a_replica_that_cannot_read_its_lease_says_so_and_why() {
    // RBAC forbids Leases: the replica never leads. client-go logs "error retrieving resource
    // lock" at each attempt; here the first failure is a warning naming what is missing
    // (later ones at most once a minute), and the replica stays a standby.
    let server = server().await;
    server.faults().fail_next(
        RequestMatch::any().resource("leases"),
        usize::MAX,
        FailureCode::Status(informer_testing::ApiError::forbidden(
            "system:serviceaccount:default:controller",
            "get",
            "leases",
            Some("default"),
        )),
    );
    let warnings = super::support::Warnings::default();
    let _guard = tracing::subscriber::set_default(warnings.clone());
    let elector = LeaderElector::new(server.client(), config("a"));
    let candidate = start(&elector);
    super::support::eventually("the failure is reported", || {
        !warnings.0.lock().unwrap().is_empty()
    })
    .await;
    // A few more attempts: not reported again within the minute.
    tokio::time::sleep(RETRY * 5).await;
    let reported = warnings.0.lock().unwrap().clone();
    assert_eq!(reported.len(), 1, "{reported:#?}");
    assert!(
        reported[0].contains("leases.coordination.k8s.io") && reported[0].contains("forbidden"),
        "{}",
        reported[0]
    );
    assert!(!elector.is_leader());
    candidate.cancel.cancel();
    candidate.task.await.unwrap();
}
