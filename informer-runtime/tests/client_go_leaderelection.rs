//! client-go v0.36's leader election unit tests
//! (`k8s.io/client-go/tools/leaderelection/leaderelection_test.go`), ported onto
//! [`LeaderElector`] to find behaviour that differs from client-go. Each test is named
//! `leaderelection_test_<go test>` in snake case (table cases get their name appended).
//! `resourcelock/leaselock_test.go`'s tests are `leaselock_test_<go test>`: the lock is
//! crate-private here, so they are ported through the elector where the rule is observable.
//! `healthzadaptor_test.go`'s tests are `healthzadaptor_test_<go test>`, on
//! [`HealthzAdaptor`] and [`LeaderElector::check`].
//!
//! Adaptations:
//! - client-go's tests drive the elector's private `tryAcquireOrRenew` / `release` against
//!   `fake.Clientset` reactors. Here the elector is driven through its public API (`run`,
//!   `subscribe`, `is_leader`) against a `kube::Client` whose transport is an in-memory
//!   Lease API ([`FakeApi`]): it records every call (the Go tests' `c.Actions()` / `lockOps`)
//!   and lets each test react to a call (fail it, hang it, cancel the run), as the Go
//!   reactors do. Writes are checked against the `resourceVersion`, as a real API server does.
//! - client-go's elector can be seeded with an observed record and time; this one cannot, so
//!   "observed long ago" / "observed just now" become "the record stayed unchanged for its
//!   lease duration" / "a record with a long lease duration".
//! - The elector reads tokio's clock: tests run under `start_paused`.
//! - The healthz adaptor's tests seed client-go's elector with an observed record, an
//!   observed time and a fake clock. Here an elector is run until it has observed the record
//!   (it leads, or stands by behind another holder), then its loop is no longer polled (a
//!   stuck loop, the case the check exists for), and paused time is advanced. The check's
//!   message names the Lease ([`LeaderElectionConfig::lease_name`]): there is no separate
//!   `Name` setting as in client-go's config, so the Go test's `foo` is this file's Lease,
//!   `bar`.
//! - No event recorder exists here: the Go tests' `expectedEvents` are not ported.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::BodyExt;
use informer_runtime::kube;
use informer_runtime::leader::{
    CancellationToken, HealthzAdaptor, LeaderElectionConfig, LeaderElector, LeaderState,
};
use informer_runtime::lease::ConfigError;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, timeout};

const NAMESPACE: &str = "foo";
const NAME: &str = "bar";
const IDENTITY: &str = "baz";
const SEC: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);
/// client-go's `wait.ForeverTestTimeout` (paused time: reaching it costs nothing).
const FOREVER: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------
// The fake Lease API
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verb {
    Get,
    Create,
    Update,
    Delete,
}

use Verb::{Create, Get, Update};

/// What the fake does with one call (client-go's `ReactionFunc`).
enum Reaction {
    /// What an API server would do.
    Serve,
    /// Fail with this HTTP status code.
    Fail(u16),
    /// Never answer (a request in flight that the caller abandons).
    Hang,
    /// Serve, then run this (for example cancel the elector) before answering.
    ServeThen(Box<dyn FnOnce() + Send>),
}

/// Decides the reaction to the `n`th call (1-based) of `verb`.
type Reactor = Box<dyn Fn(Verb, usize) -> Reaction + Send + Sync>;

struct FakeApi {
    lease: Mutex<Option<Lease>>,
    revision: Mutex<u64>,
    ops: Mutex<Vec<Verb>>,
    reactor: Reactor,
}

impl FakeApi {
    fn new(initial: Option<LeaseSpec>, reactor: Reactor) -> Arc<Self> {
        let api = Arc::new(Self {
            lease: Mutex::new(None),
            revision: Mutex::new(0),
            ops: Mutex::new(Vec::new()),
            reactor,
        });
        if let Some(spec) = initial {
            api.store(Lease {
                metadata: ObjectMeta::default(),
                spec: Some(spec),
            });
        }
        api
    }

    fn serving(initial: Option<LeaseSpec>) -> Arc<Self> {
        Self::new(initial, Box::new(|_, _| Reaction::Serve))
    }

    fn ops(&self) -> Vec<Verb> {
        self.ops.lock().unwrap().clone()
    }

    fn count(&self, verb: Verb) -> usize {
        self.ops().iter().filter(|v| **v == verb).count()
    }

    fn lease(&self) -> Lease {
        self.lease
            .lock()
            .unwrap()
            .clone()
            .expect("the lease exists")
    }

    fn spec(&self) -> LeaseSpec {
        self.lease().spec.expect("the lease has a spec")
    }

    fn store(&self, mut lease: Lease) -> Lease {
        let mut rv = self.revision.lock().unwrap();
        *rv += 1;
        lease.metadata.name = Some(NAME.into());
        lease.metadata.namespace = Some(NAMESPACE.into());
        lease.metadata.resource_version = Some(rv.to_string());
        *self.lease.lock().unwrap() = Some(lease.clone());
        lease
    }

    fn client(self: &Arc<Self>) -> kube::Client {
        kube::Client::new(FakeService(self.clone()), NAMESPACE)
    }

    async fn handle(
        &self,
        request: http::Request<kube::client::Body>,
    ) -> http::Response<kube::client::Body> {
        let (parts, body) = request.into_parts();
        let body = body.collect().await.expect("request body").to_bytes();
        let verb = match parts.method {
            http::Method::GET => Get,
            http::Method::POST => Create,
            http::Method::PUT => Update,
            http::Method::DELETE => Verb::Delete,
            ref other => panic!("unexpected method {other} {}", parts.uri),
        };
        let path = parts.uri.path();
        let collection = format!("/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases");
        let expected = if verb == Create {
            collection
        } else {
            format!("{collection}/{NAME}")
        };
        assert_eq!(path, expected, "unexpected {verb:?} path");
        let n = {
            let mut ops = self.ops.lock().unwrap();
            ops.push(verb);
            ops.iter().filter(|v| **v == verb).count()
        };
        match (self.reactor)(verb, n) {
            Reaction::Serve => self.serve(verb, &body),
            Reaction::Fail(code) => status(code),
            Reaction::Hang => std::future::pending().await,
            Reaction::ServeThen(then) => {
                let response = self.serve(verb, &body);
                then();
                response
            }
        }
    }

    fn serve(&self, verb: Verb, body: &[u8]) -> http::Response<kube::client::Body> {
        let current = self.lease.lock().unwrap().clone();
        match verb {
            Get => match current {
                Some(lease) => json(200, &lease),
                None => status(404),
            },
            Create => {
                if current.is_some() {
                    return status(409);
                }
                let lease: Lease = serde_json::from_slice(body).expect("a Lease");
                json(201, &self.store(lease))
            }
            Update => {
                let lease: Lease = serde_json::from_slice(body).expect("a Lease");
                let Some(current) = current else {
                    return status(404);
                };
                if current.metadata.resource_version != lease.metadata.resource_version {
                    return status(409);
                }
                json(200, &self.store(lease))
            }
            Verb::Delete => panic!("leader election never deletes its Lease"),
        }
    }
}

fn json<T: serde::Serialize>(code: u16, value: &T) -> http::Response<kube::client::Body> {
    http::Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(kube::client::Body::from(serde_json::to_vec(value).unwrap()))
        .unwrap()
}

fn status(code: u16) -> http::Response<kube::client::Body> {
    let reason = match code {
        404 => "NotFound",
        409 => "Conflict",
        _ => "InternalError",
    };
    let body = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": reason,
        "reason": reason,
        "code": code,
    });
    json(code, &body)
}

#[derive(Clone)]
struct FakeService(Arc<FakeApi>);

impl tower_service::Service<http::Request<kube::client::Body>> for FakeService {
    type Response = http::Response<kube::client::Body>;
    type Error = std::convert::Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let api = self.0.clone();
        Box::pin(async move { Ok(api.handle(request).await) })
    }
}

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// client-go's `LeaderElectionRecordToLeaseSpec` of a record with these fields.
fn record(holder: &str, lease_duration_seconds: i32) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(holder.into()),
        lease_duration_seconds: Some(lease_duration_seconds),
        lease_transitions: Some(0),
        ..LeaseSpec::default()
    }
}

fn config(lease: Duration, renew: Duration, retry: Duration) -> LeaderElectionConfig {
    let mut config =
        LeaderElectionConfig::new(NAME, NAMESPACE, IDENTITY).with_timings(lease, renew, retry);
    config.release_on_cancel = false;
    config
}

struct Running {
    elector: LeaderElector,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

fn start(api: &Arc<FakeApi>, config: LeaderElectionConfig) -> Running {
    let elector = LeaderElector::new(api.client(), config);
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let elector = elector.clone();
        let cancel = cancel.clone();
        async move { elector.run(cancel).await }
    });
    Running {
        elector,
        cancel,
        task,
    }
}

impl Running {
    /// Waits until leading; the ops seen at that moment are the acquisition's.
    async fn leading(&self) {
        let mut states = self.elector.subscribe();
        timeout(FOREVER, async {
            loop {
                if states.borrow_and_update().is_leading() {
                    return;
                }
                states.changed().await.unwrap();
            }
        })
        .await
        .expect("became the leader");
    }

    async fn stop(self) {
        self.cancel.cancel();
        timeout(FOREVER, self.task)
            .await
            .expect("run returned")
            .unwrap();
    }

    /// What client-go's `OnNewLeader` would have reported last.
    fn reported_leader(&self) -> Option<String> {
        match &*self.elector.subscribe().borrow() {
            LeaderState::Leading { .. } => Some(IDENTITY.into()),
            LeaderState::Standby { holder } => holder.clone(),
        }
    }
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    timeout(FOREVER, async {
        while !done() {
            sleep(MS).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

// ---------------------------------------------------------------------------------------
// TestTryAcquireOrRenewLeases (testTryAcquireOrRenew(t, "leases"))
// ---------------------------------------------------------------------------------------

/// One table case: the Lease before, and what the acquisition must look like.
struct AcquireCase {
    initial: Option<LeaseSpec>,
    /// The API calls up to the moment the elector leads (or, if it must not, up to `within`).
    ops: &'static [Verb],
    expect_success: bool,
    transition_leader: bool,
    out_holder: &'static str,
    /// client-go's `retryAfter`: how long after the first attempt the lease may be taken.
    retry_after: Duration,
}

/// The Go test's config has only `LeaseDuration: 10s`; the renew deadline and the retry
/// period (whose first step is what client-go's `retryAfter` sleeps) are chosen so that
/// the elector's second attempt comes after `retryAfter` (3 s), and before 6.6 s (a standby
/// waits 1 to 2.2 retry periods, client-go's jitter factor of 1.2).
fn acquire_config() -> LeaderElectionConfig {
    config(10 * SEC, 5 * SEC, 3 * SEC)
}

async fn try_acquire_or_renew(case: AcquireCase) {
    let api = FakeApi::serving(case.initial);
    let started = Instant::now();
    let run = start(&api, acquire_config());
    if case.expect_success {
        run.leading().await;
        let elapsed = started.elapsed();
        assert!(
            elapsed >= case.retry_after,
            "acquired after {elapsed:?}, before {:?}",
            case.retry_after
        );
        assert_eq!(api.ops(), case.ops, "API calls of the acquisition");
        let spec = api.spec();
        assert_eq!(spec.holder_identity.as_deref(), Some(case.out_holder));
        let transitions = spec.lease_transitions.unwrap_or(0);
        if case.transition_leader {
            assert_eq!(
                transitions, 1,
                "leader should have transitioned but did not"
            );
        } else {
            assert_eq!(
                transitions, 0,
                "leader should not have transitioned but did"
            );
        }
    } else {
        // One attempt (and the time a second would start) must not acquire.
        wait_for("the first attempt", || api.count(Get) == 1).await;
        sleep(MS).await;
        assert!(!run.elector.is_leader());
        assert_eq!(api.ops(), case.ops, "API calls of the attempt");
        assert_eq!(
            api.spec().lease_transitions.unwrap_or(0),
            0,
            "leader should not have transitioned but did"
        );
    }
    // Go: `le.observedRecord.HolderIdentity != test.outHolder`, which is `GetLeader`.
    assert_eq!(
        run.elector.leader().as_deref(),
        Some(case.out_holder),
        "expected holder"
    );
    assert_eq!(
        run.reported_leader().as_deref(),
        Some(case.out_holder),
        "reported leader was not the new leader"
    );
    run.stop().await;
}

// Go: TestTryAcquireOrRenewLeases / "acquire from no object"
#[tokio::test(start_paused = true)]
async fn leaderelection_test_try_acquire_or_renew_leases_acquire_from_no_object() {
    try_acquire_or_renew(AcquireCase {
        initial: None,
        ops: &[Get, Create],
        expect_success: true,
        transition_leader: false,
        out_holder: IDENTITY,
        retry_after: Duration::ZERO,
    })
    .await;
}

// Go: TestTryAcquireOrRenewLeases / "acquire from object without annotations"
#[tokio::test(start_paused = true)]
async fn leaderelection_test_try_acquire_or_renew_leases_acquire_from_object_without_annotations() {
    try_acquire_or_renew(AcquireCase {
        initial: Some(LeaseSpec::default()),
        ops: &[Get, Update],
        expect_success: true,
        transition_leader: true,
        out_holder: IDENTITY,
        retry_after: Duration::ZERO,
    })
    .await;
}

// Go: TestTryAcquireOrRenewLeases / "acquire from led object with the lease duration seconds"
// (the record's 3 s, not the elector's own 10 s, decide when the lease expires)
#[tokio::test(start_paused = true)]
async fn leaderelection_test_try_acquire_or_renew_leases_acquire_from_led_object_with_the_lease_duration_seconds()
 {
    try_acquire_or_renew(AcquireCase {
        initial: Some(record("bing", 3)),
        ops: &[Get, Get, Update],
        expect_success: true,
        transition_leader: true,
        out_holder: IDENTITY,
        retry_after: 3 * SEC,
    })
    .await;
}

// Go: TestTryAcquireOrRenewLeases / "acquire from unled object"
#[tokio::test(start_paused = true)]
async fn leaderelection_test_try_acquire_or_renew_leases_acquire_from_unled_object() {
    try_acquire_or_renew(AcquireCase {
        initial: Some(record("", 0)),
        ops: &[Get, Update],
        expect_success: true,
        transition_leader: true,
        out_holder: IDENTITY,
        retry_after: Duration::ZERO,
    })
    .await;
}

// Go: TestTryAcquireOrRenewLeases / "acquire from led, unacked object"
// (Go seeds the elector with bing's record observed 1000 h ago; here bing's record, with no
// lease duration, is seen unchanged at the next attempt: expired then)
#[tokio::test(start_paused = true)]
async fn leaderelection_test_try_acquire_or_renew_leases_acquire_from_led_unacked_object() {
    try_acquire_or_renew(AcquireCase {
        initial: Some(LeaseSpec {
            holder_identity: Some("bing".into()),
            ..LeaseSpec::default()
        }),
        ops: &[Get, Get, Update],
        expect_success: true,
        transition_leader: true,
        out_holder: IDENTITY,
        retry_after: Duration::ZERO,
    })
    .await;
}

// Go: TestTryAcquireOrRenewLeases / "acquire from empty led, acked object"
#[tokio::test(start_paused = true)]
async fn leaderelection_test_try_acquire_or_renew_leases_acquire_from_empty_led_acked_object() {
    try_acquire_or_renew(AcquireCase {
        initial: Some(record("", 10)),
        ops: &[Get, Update],
        expect_success: true,
        transition_leader: true,
        out_holder: IDENTITY,
        retry_after: Duration::ZERO,
    })
    .await;
}

// Go: TestTryAcquireOrRenewLeases / "don't acquire from led, acked object"
// (Go seeds an observation time in the future; here bing's record has a 10 s duration)
#[tokio::test(start_paused = true)]
async fn leaderelection_test_try_acquire_or_renew_leases_dont_acquire_from_led_acked_object() {
    try_acquire_or_renew(AcquireCase {
        initial: Some(record("bing", 10)),
        ops: &[Get],
        expect_success: false,
        transition_leader: false,
        out_holder: "bing",
        retry_after: Duration::ZERO,
    })
    .await;
}

// Go: TestTryAcquireOrRenewLeases / "renew already acquired object"
#[tokio::test(start_paused = true)]
async fn leaderelection_test_try_acquire_or_renew_leases_renew_already_acquired_object() {
    try_acquire_or_renew(AcquireCase {
        initial: Some(record(IDENTITY, 0)),
        ops: &[Get, Update],
        expect_success: true,
        transition_leader: false,
        out_holder: IDENTITY,
        retry_after: Duration::ZERO,
    })
    .await;
}

// Go: TestTryCoordinatedRenew — not ported: coordinated leader election (`Coordinated: true`,
// LeaseCandidates) is not implemented by this crate.

// Go: TestLeaseSpecToLeaderElectionRecordRoundTrip — the conversion is crate-private here
// (`lease::record`); ported through what it is for: a holder that renews a Lease keeps
// every field of its record (holder, duration, acquire time to the microsecond, transitions).
#[tokio::test(start_paused = true)]
async fn leaderelection_test_lease_spec_to_leader_election_record_round_trip() {
    let acquired: Timestamp = "2024-05-06T07:08:09.123456Z".parse().unwrap();
    let old_spec = LeaseSpec {
        holder_identity: Some(IDENTITY.into()),
        lease_duration_seconds: Some(10),
        acquire_time: Some(MicroTime(acquired)),
        renew_time: Some(MicroTime(acquired)),
        lease_transitions: Some(1),
        ..LeaseSpec::default()
    };
    let api = FakeApi::serving(Some(old_spec.clone()));
    let run = start(&api, config(10 * SEC, 5 * SEC, SEC));
    run.leading().await;
    wait_for("a renewal", || api.count(Update) >= 2).await;
    let new_spec = api.spec();
    assert_eq!(new_spec.holder_identity, old_spec.holder_identity);
    assert_eq!(
        new_spec.lease_duration_seconds,
        old_spec.lease_duration_seconds
    );
    assert_eq!(new_spec.acquire_time, old_spec.acquire_time);
    assert_eq!(new_spec.lease_transitions, old_spec.lease_transitions);
    assert!(new_spec.renew_time.is_some());
    run.stop().await;
}

// ---------------------------------------------------------------------------------------
// TestReleaseLeaseLeases, TestReleaseMethodCallsGet
// ---------------------------------------------------------------------------------------

// Go: TestReleaseLeaseLeases (testReleaseLease(t, "leases")) / "release acquired lock from
// no object". Documented difference: client-go's `release` reads the Lease first (4 calls:
// get, update, get, update); this elector's release is one update conditioned on the
// resourceVersion of its own last write (leader/mod.rs, "Release on clean shutdown"), so
// 3 calls.
#[tokio::test(start_paused = true)]
async fn leaderelection_test_release_lease_leases() {
    let api = FakeApi::serving(Some(record(IDENTITY, 10)));
    let mut config = config(10 * SEC, 5 * SEC, SEC);
    config.release_on_cancel = true;
    let run = start(&api, config);
    run.leading().await;
    assert_eq!(run.reported_leader().as_deref(), Some(IDENTITY));
    let elector = run.elector.clone();
    run.stop().await;

    assert_eq!(
        api.ops(),
        [Get, Update, Update],
        "API calls (client-go: get, update, get, update)"
    );
    let spec = api.spec();
    assert_eq!(
        spec.holder_identity.as_deref(),
        Some(""),
        "released: no holder"
    );
    assert_eq!(spec.lease_duration_seconds, Some(1), "released: one second");
    assert_eq!(
        spec.lease_transitions,
        Some(0),
        "leader should not have transitioned but did"
    );
    assert!(!elector.is_leader());
    let reported = match &*elector.subscribe().borrow() {
        LeaderState::Standby { holder } => holder.clone(),
        LeaderState::Leading { .. } => panic!("still leading"),
    };
    assert_eq!(
        reported, None,
        "reported leader after the release: none (client-go: \"\")"
    );
}

// Go: TestReleaseMethodCallsGet. Documented difference (leader/mod.rs: "The release is one
// request, conditioned on the resourceVersion of the leader's own last write (client-go
// reads the Lease first)"): asserted here is that the release does *not* read the Lease when
// its write succeeds, and does read it after a conflict.
#[tokio::test(start_paused = true)]
async fn leaderelection_test_release_method_calls_get() {
    // No conflict: no get.
    let api = FakeApi::serving(Some(record(IDENTITY, 10)));
    let mut cfg = config(10 * SEC, 5 * SEC, SEC);
    cfg.release_on_cancel = true;
    let run = start(&api, cfg.clone());
    run.leading().await;
    let before = api.count(Get);
    run.stop().await;
    assert_eq!(
        api.count(Get),
        before,
        "release without a conflict reads nothing"
    );
    assert_eq!(api.spec().holder_identity.as_deref(), Some(""));

    // The release's write conflicts (someone touched the Lease): it reads the Lease, then
    // releases it since the record still names this holder.
    let api = FakeApi::new(
        Some(record(IDENTITY, 10)),
        Box::new(|verb, n| match (verb, n) {
            (Update, 2) => Reaction::Fail(409),
            _ => Reaction::Serve,
        }),
    );
    let run = start(&api, cfg);
    run.leading().await;
    run.stop().await;
    assert_eq!(api.ops(), [Get, Update, Update, Get, Update]);
    assert_eq!(api.spec().holder_identity.as_deref(), Some(""));
}

// ---------------------------------------------------------------------------------------
// TestReleaseOnCancellation_Leases
// ---------------------------------------------------------------------------------------

fn release_on_cancel_config() -> LeaderElectionConfig {
    let mut config = config(15 * SEC, 2 * SEC, SEC);
    config.release_on_cancel = true;
    config
}

// Go: TestReleaseOnCancellation_Leases / "release acquired lock on cancellation of update".
// The Go reactor fails every odd update before the 5th (client-go's fast-path renewals) and
// holds the 4th until the run is cancelled; the 5th (the release) must succeed. Same
// reactor here.
#[tokio::test(start_paused = true)]
async fn leaderelection_test_release_on_cancellation_leases_cancellation_of_update() {
    let api = FakeApi::new(
        None,
        Box::new(|verb, n| match (verb, n) {
            (Update, n) if n % 2 == 1 && n < 5 => Reaction::Fail(500),
            (Update, 4) => Reaction::Hang,
            _ => Reaction::Serve,
        }),
    );
    let run = start(&api, release_on_cancel_config());
    run.leading().await;
    // Wait for the renewal (update) that hangs.
    wait_for("the 4th update", || api.count(Update) >= 4).await;
    // Cancel while it is in flight: the release must follow.
    run.cancel.cancel();
    wait_for("the release", || api.count(Update) >= 5).await;
    timeout(FOREVER, run.task)
        .await
        .expect("run returned")
        .unwrap();
    let spec = api.spec();
    assert_eq!(
        spec.holder_identity.as_deref(),
        Some(""),
        "the lock was not released"
    );
    assert_eq!(spec.lease_duration_seconds, Some(1));
}

// Go: TestReleaseOnCancellation_Leases / "release acquired lock on cancellation of get".
// The Go reactor makes client-go's renewal fall back to reading the Lease and holds that
// read until the run is cancelled. This elector reads during a renewal only after a
// conflict, so the renewal's update conflicts, and the read that follows hangs.
#[tokio::test(start_paused = true)]
async fn leaderelection_test_release_on_cancellation_leases_cancellation_of_get() {
    let api = FakeApi::new(
        None,
        Box::new(|verb, n| match (verb, n) {
            (Update, 1) => Reaction::Fail(409),
            (Get, 2) => Reaction::Hang,
            _ => Reaction::Serve,
        }),
    );
    let run = start(&api, release_on_cancel_config());
    run.leading().await;
    wait_for("the renewal's read", || api.count(Get) >= 2).await;
    run.cancel.cancel();
    wait_for("the release", || api.count(Update) >= 2).await;
    timeout(FOREVER, run.task)
        .await
        .expect("run returned")
        .unwrap();
    assert_eq!(api.ops(), [Get, Create, Update, Get, Update]);
    let spec = api.spec();
    assert_eq!(
        spec.holder_identity.as_deref(),
        Some(""),
        "the lock was not released"
    );
}

// ---------------------------------------------------------------------------------------
// TestLeaderElectionConfigValidation
// ---------------------------------------------------------------------------------------

// Go: TestLeaderElectionConfigValidation (the error is this crate's: "identity must not be
// empty", where client-go says "Lock identity is empty")
/// client-go's `acquire` polls with `wait.JitterUntil(.., RetryPeriod, JitterFactor = 1.2,
/// ..)`: each wait is 1 to 2.2 retry periods, 1.6 on average, so a standby makes about 62
/// attempts in 100 s at a 1 s retry period (never fewer than 45; 91 with a 20 % jitter).
#[tokio::test(start_paused = true)]
async fn leaderelection_test_standby_waits_one_to_two_point_two_retry_periods() {
    let api = FakeApi::serving(Some(record("bing", 100_000)));
    let run = start(&api, config(10 * SEC, 5 * SEC, SEC));
    sleep(100 * SEC).await;
    let attempts = api.count(Get);
    run.stop().await;
    assert!(
        (46..=80).contains(&attempts),
        "{attempts} standby attempts in 100 s, client-go makes about 62"
    );
}

#[tokio::test]
async fn leaderelection_test_leader_election_config_validation() {
    let api = FakeApi::serving(None);
    let mut config =
        LeaderElectionConfig::new(NAME, NAMESPACE, IDENTITY).with_timings(15 * SEC, 2 * SEC, SEC);
    config.release_on_cancel = true;
    assert!(LeaderElector::try_new(api.client(), config.clone()).is_ok());

    // Invalid lock identity.
    config.identity = String::new();
    let err = LeaderElector::try_new(api.client(), config).unwrap_err();
    assert_eq!(err, ConfigError::Empty { field: "identity" });
}

// ---------------------------------------------------------------------------------------
// TestFastPathLeaderElection
// ---------------------------------------------------------------------------------------

fn fast_path_config() -> LeaderElectionConfig {
    config(15 * SEC, 2 * SEC, SEC)
}

/// Runs the elector to completion (Go calls `elector.Run(ctx)` synchronously); the reactor
/// cancels it from inside the `cancel_at`th update.
async fn fast_path(conflict_at: Option<usize>, cancel_at: usize) -> Vec<Verb> {
    let cancel = CancellationToken::new();
    let api = FakeApi::new(None, {
        let cancel = cancel.clone();
        Box::new(move |verb, n| match verb {
            Update if Some(n) == conflict_at => Reaction::Fail(409),
            Update if n == cancel_at => {
                let cancel = cancel.clone();
                Reaction::ServeThen(Box::new(move || cancel.cancel()))
            }
            _ => Reaction::Serve,
        })
    });
    let elector = LeaderElector::new(api.client(), fast_path_config());
    timeout(FOREVER, elector.run(cancel))
        .await
        .expect("run returned");
    api.ops()
}

// Go: TestFastPathLeaderElection / "Exercise fast path after lock acquired"
#[tokio::test(start_paused = true)]
async fn leaderelection_test_fast_path_leader_election_exercise_fast_path_after_lock_acquired() {
    let ops = fast_path(None, 2).await;
    assert_eq!(ops, [Get, Create, Update, Update]);
}

// Go: TestFastPathLeaderElection / "Fallback to slow path after fast path fails"
#[tokio::test(start_paused = true)]
async fn leaderelection_test_fast_path_leader_election_fallback_to_slow_path_after_fast_path_fails()
{
    let ops = fast_path(Some(2), 4).await;
    assert_eq!(ops, [Get, Create, Update, Update, Get, Update, Update]);
}

// Not a Go test case: client-go's fast path falls back to the slow path (get, then update)
// on *any* error of the optimistic update, not only on a conflict (`tryAcquireOrRenew`:
// "Failed to update lock optimistically ... falling back to slow path"); the Go test above
// only exercises a conflict, and TestReleaseOnCancellation's reactors rely on the fallback
// after other errors. So does this elector: a 500 is followed by a read at once.
#[tokio::test(start_paused = true)]
async fn leaderelection_test_fast_path_leader_election_fallback_after_server_error() {
    let cancel = CancellationToken::new();
    let api = FakeApi::new(None, {
        let cancel = cancel.clone();
        Box::new(move |verb, n| match (verb, n) {
            (Update, 2) => Reaction::Fail(500),
            (Update, 4) => {
                let cancel = cancel.clone();
                Reaction::ServeThen(Box::new(move || cancel.cancel()))
            }
            _ => Reaction::Serve,
        })
    });
    let elector = LeaderElector::new(api.client(), fast_path_config());
    timeout(FOREVER, elector.run(cancel))
        .await
        .expect("run returned");
    // As client-go: get, create, update, update (500), get, update, update.
    assert_eq!(
        api.ops(),
        [Get, Create, Update, Update, Get, Update, Update]
    );
}

// ---------------------------------------------------------------------------------------
// TestCheckMethodRace
// ---------------------------------------------------------------------------------------

// Go: TestCheckMethodRace — a race-detector test of `Check` (the healthz adaptor) read while
// `Run` writes the observed record. Here `check`, `is_leader` and `subscribe` are read
// throughout a run with the same aggressive timings (Rust's types rule out the data race
// itself); a running loop passes the check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaderelection_test_check_method_race() {
    let api = FakeApi::serving(None);
    let run = start(&api, config(2 * SEC, SEC, 5 * MS));
    let started = std::time::Instant::now();
    let mut led = false;
    while started.elapsed() < Duration::from_millis(200) {
        led |= run.elector.is_leader();
        let _ = run.elector.subscribe().borrow().holder().map(str::len);
        assert_eq!(run.elector.check(20 * SEC), Ok(()), "a running loop passes");
        tokio::time::sleep(MS).await;
    }
    assert!(led, "became the leader");
    run.stop().await;
    assert!(api.count(Update) >= 2, "renewed every 5 ms");
}

// ---------------------------------------------------------------------------------------
// resourcelock/leaselock_test.go
// ---------------------------------------------------------------------------------------

// Go: TestLabelUpdate (resourcelock/leaselock_test.go), with TestUpdateWithNilLabels: labels
// another writer put on the Lease survive the holder's next renews (client-go's `LeaseLock`
// writes its record over the Lease it read). The lock's own `Labels` option has no
// counterpart here (`LeaderElectionConfig` takes no labels), so only the other writer's labels
// are checked; the lock's `Get`/`Create`/`Update`/`Describe`/`RecordEvent` are crate-private
// and observed through the elector.
#[tokio::test(start_paused = true)]
async fn leaselock_test_label_update() {
    let api = FakeApi::serving(None);
    let run = start(&api, config(15 * SEC, 10 * SEC, 2 * SEC));
    run.leading().await;
    // Another writer labels the Lease (a write: its resource version changes).
    let mut lease = api.lease();
    lease.metadata.labels = Some(
        [
            ("custom-key".to_owned(), "new-custom-val".to_owned()),
            ("custom-key-2".to_owned(), "custom-val-2".to_owned()),
        ]
        .into(),
    );
    let labelled = api.store(lease);
    let labelled_rv: u64 = labelled.metadata.resource_version.unwrap().parse().unwrap();
    // Two renews by the holder after the label.
    wait_for("two renews after the label", || {
        let rv: u64 = api
            .lease()
            .metadata
            .resource_version
            .unwrap()
            .parse()
            .unwrap();
        rv >= labelled_rv + 2
    })
    .await;
    assert!(run.elector.is_leader(), "still the leader");
    let lease = api.lease();
    assert_eq!(
        lease.spec.unwrap().holder_identity.as_deref(),
        Some(IDENTITY)
    );
    let labels = lease.metadata.labels.expect("labels were kept");
    assert_eq!(
        labels.get("custom-key").map(String::as_str),
        Some("new-custom-val")
    );
    assert_eq!(
        labels.get("custom-key-2").map(String::as_str),
        Some("custom-val-2")
    );
    run.stop().await;
}

// ---------------------------------------------------------------------------------------
// healthzadaptor_test.go: TestLeaderElectionHealthChecker
// ---------------------------------------------------------------------------------------

/// The Go test's tolerance (`adaptorTimeout`) and lease duration (`LeaseDuration`).
const ADAPTOR_TIMEOUT: Duration = Duration::from_secs(20);
const MINUTE: Duration = Duration::from_secs(60);

/// The election loop of an elector, no longer polled once it has observed the record.
type Stalled<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// Runs `elector`'s loop until its state satisfies `observed`, then stops polling it (the
/// loop stays alive: stuck). Returns the loop; the record was observed at the current
/// instant.
async fn observe_then_stall<'a>(
    elector: &'a LeaderElector,
    observed: impl Fn(&LeaderState) -> bool,
) -> Stalled<'a> {
    let mut run: Stalled<'a> = Box::pin(elector.run(CancellationToken::new()));
    let mut states = elector.subscribe();
    let seen = async {
        loop {
            if observed(&states.borrow_and_update()) {
                return;
            }
            states.changed().await.unwrap();
        }
    };
    timeout(FOREVER, async {
        tokio::select! {
            () = seen => {}
            () = &mut run => panic!("the election loop returned"),
        }
    })
    .await
    .expect("observed the record");
    run
}

/// The Go test's elector: identity `healthTest`, a one-minute lease.
fn health_elector(api: &Arc<FakeApi>) -> LeaderElector {
    let config = LeaderElectionConfig::new(NAME, NAMESPACE, "healthTest").with_timings(
        MINUTE,
        40 * SEC,
        2 * SEC,
    );
    LeaderElector::new(api.client(), config)
}

/// One table case: the adaptor's check after `since_observed`, with an elector leading
/// (`holder` is `healthTest`) or standing by behind `holder`; `None`: no elector.
async fn leader_election_health_checker(
    holder: Option<&str>,
    since_observed: Duration,
) -> Result<(), String> {
    let adaptor = HealthzAdaptor::new(ADAPTOR_TIMEOUT);
    assert!(
        adaptor.leader_elector().is_none(),
        "the adaptor starts without an elector"
    );
    let api = match holder {
        Some("healthTest") | None => FakeApi::serving(None),
        Some(other) => FakeApi::serving(Some(record(other, 60))),
    };
    let elector = health_elector(&api);
    let _stalled = match holder {
        None => None,
        Some(holder) => {
            let leads = holder == "healthTest";
            let stalled = observe_then_stall(&elector, |state| {
                if leads {
                    state.is_leading()
                } else {
                    state.holder() == Some(holder)
                }
            })
            .await;
            adaptor.set_leader_elector(elector.clone());
            assert!(
                adaptor.leader_elector().is_some(),
                "the adaptor has the elector"
            );
            Some(stalled)
        }
    };
    tokio::time::advance(since_observed).await;
    adaptor.check().map_err(|e| e.to_string())
}

// Go: TestLeaderElectionHealthChecker, "call check before leader elector initialized".
#[tokio::test(start_paused = true)]
async fn healthzadaptor_test_leader_election_health_checker_call_check_before_leader_elector_initialized()
 {
    assert_eq!(
        leader_election_health_checker(None, Duration::from_secs(3600)).await,
        Ok(())
    );
}

// Go: TestLeaderElectionHealthChecker, "call check when the lease is far expired": the
// leader's record observed an hour ago.
#[tokio::test(start_paused = true)]
async fn healthzadaptor_test_leader_election_health_checker_call_check_when_the_lease_is_far_expired()
 {
    assert_eq!(
        leader_election_health_checker(Some("healthTest"), Duration::from_secs(3600)).await,
        Err(format!(
            "failed election to renew leadership on lease {NAME}"
        ))
    );
}

// Go: TestLeaderElectionHealthChecker, "call check when the lease is far expired but held by
// another server": a standby passes.
#[tokio::test(start_paused = true)]
async fn healthzadaptor_test_leader_election_health_checker_call_check_when_the_lease_is_far_expired_but_held_by_another_server()
 {
    assert_eq!(
        leader_election_health_checker(Some("otherServer"), Duration::from_secs(3600)).await,
        Ok(())
    );
}

// Go: TestLeaderElectionHealthChecker, "call check when the lease is not expired".
#[tokio::test(start_paused = true)]
async fn healthzadaptor_test_leader_election_health_checker_call_check_when_the_lease_is_not_expired()
 {
    assert_eq!(
        leader_election_health_checker(Some("healthTest"), Duration::ZERO).await,
        Ok(())
    );
}

// Go: TestLeaderElectionHealthChecker, "call check when the lease is expired but inside the
// timeout": a minute and a second after the renewal, with 20 s of tolerance.
#[tokio::test(start_paused = true)]
async fn healthzadaptor_test_leader_election_health_checker_call_check_when_the_lease_is_expired_but_inside_the_timeout()
 {
    assert_eq!(
        leader_election_health_checker(Some("healthTest"), MINUTE + SEC).await,
        Ok(())
    );
}
