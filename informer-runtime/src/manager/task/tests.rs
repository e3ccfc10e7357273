//! How the manager drives a task, one rule per test, under paused tokio time: when it
//! starts, how it stops, what a failure does, and leadership (against the fake Lease store).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::leader::{LeaderElectionConfig, LeaderElector, LeaderState};
use crate::lease::fake::{FakeLeases, Partition};

/// A task that counts its calls, sets `stopped` once its token is cancelled, and returns.
fn counting(calls: &Arc<AtomicUsize>, stopped: &Arc<AtomicBool>) -> Task {
    let (calls, stopped) = (calls.clone(), stopped.clone());
    Task::new("counting", move |cancel: CancellationToken| {
        calls.fetch_add(1, Ordering::SeqCst);
        let stopped = stopped.clone();
        async move {
            cancel.cancelled().await;
            stopped.store(true, Ordering::SeqCst);
            Ok(())
        }
    })
}

/// Sets its flag when dropped: a task's future dropped midway.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn spawn_drive(
    task: Task,
    shutdown: &CancellationToken,
    elector: Option<LeaderElector>,
    pending: watch::Receiver<usize>,
) -> JoinHandle<()> {
    let shutdown = shutdown.clone();
    tokio::spawn(async move { drive(&task, &shutdown, elector.as_ref(), pending).await })
}

async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_task_starts_once_every_controllers_caches_are_done_syncing() {
    let (calls, stopped) = Default::default();
    let (syncing, pending) = watch::channel(2usize);
    let shutdown = CancellationToken::new();
    let run = spawn_drive(counting(&calls, &stopped), &shutdown, None, pending);
    settle().await;
    assert_eq!(calls.load(Ordering::SeqCst), 0, "two controllers syncing");
    syncing.send_modify(|n| *n -= 1);
    settle().await;
    assert_eq!(calls.load(Ordering::SeqCst), 0, "one still syncing");
    syncing.send_modify(|n| *n -= 1);
    settle().await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    shutdown.cancel();
    run.await.unwrap();
    assert!(stopped.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn shutdown_before_the_caches_synced_never_starts_the_task() {
    let (calls, stopped) = Default::default();
    let (_syncing, pending) = watch::channel(1usize);
    let shutdown = CancellationToken::new();
    let run = spawn_drive(counting(&calls, &stopped), &shutdown, None, pending);
    settle().await;
    shutdown.cancel();
    run.await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn shutdown_cancels_the_token_and_waits_for_the_task_to_return() {
    let returned = Arc::new(AtomicBool::new(false));
    let flag = returned.clone();
    let task = Task::new("flush", move |cancel: CancellationToken| {
        let flag = flag.clone();
        async move {
            cancel.cancelled().await;
            // Flushing takes a while, within the timeout.
            tokio::time::sleep(Duration::from_secs(5)).await;
            flag.store(true, Ordering::SeqCst);
            Ok(())
        }
    })
    .shutdown_timeout(Duration::from_secs(10));
    let shutdown = CancellationToken::new();
    let started = tokio::time::Instant::now();
    let run = tokio::spawn({
        let shutdown = shutdown.clone();
        async move { run_once(&task, &shutdown, None).await }
    });
    settle().await;
    shutdown.cancel();
    let ended = run.await.unwrap();
    assert!(matches!(ended, Ended::Returned), "{ended:?}");
    assert!(returned.load(Ordering::SeqCst));
    assert!(started.elapsed() >= Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn a_task_still_running_at_the_shutdown_deadline_is_dropped() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let task = Task::new("stubborn", move |_cancel: CancellationToken| {
        let guard = SetOnDrop(flag.clone());
        async move {
            let _guard = guard;
            std::future::pending::<()>().await;
            Ok(())
        }
    })
    .shutdown_timeout(Duration::from_secs(3));
    let shutdown = CancellationToken::new();
    let run = tokio::spawn({
        let shutdown = shutdown.clone();
        async move { run_once(&task, &shutdown, None).await }
    });
    settle().await;
    let cancelled_at = tokio::time::Instant::now();
    shutdown.cancel();
    let ended = run.await.unwrap();
    assert!(matches!(ended, Ended::TimedOut), "{ended:?}");
    assert_eq!(cancelled_at.elapsed(), Duration::from_secs(3));
    assert!(dropped.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn an_error_or_a_panic_ends_the_run_and_the_task_is_not_called_again() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let failing = Task::new("failing", move |_cancel: CancellationToken| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { Err("the upstream refused".into()) }
    });
    let shutdown = CancellationToken::new();
    match run_once(&failing, &shutdown, None).await {
        Ended::Failed(error) => assert_eq!(error.to_string(), "the upstream refused"),
        other => panic!("{other:?}"),
    }
    let panicking = Task::new("panicking", |_cancel: CancellationToken| async {
        panic!("index out of range")
    });
    match run_once(&panicking, &shutdown, None).await {
        Ended::Panicked(message) => assert_eq!(message, "index out of range"),
        other => panic!("{other:?}"),
    }

    // Driven: called once, not restarted, and the drive returns without shutdown.
    let (_syncing, pending) = watch::channel(0usize);
    calls.store(0, Ordering::SeqCst);
    let run = spawn_drive(failing, &shutdown, None, pending);
    tokio::time::timeout(Duration::from_secs(3600), run)
        .await
        .expect("the drive ends with the task")
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

const LEASE: Duration = Duration::from_secs(15);

fn elector(api: Arc<dyn crate::lease::api::LeaseApi>, id: &str) -> LeaderElector {
    LeaderElector::with_api(api, LeaderElectionConfig::new("lock", "default", id)).unwrap()
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

#[tokio::test(start_paused = true)]
async fn a_task_needing_leader_election_runs_each_term_and_is_dropped_when_one_ends() {
    let store = FakeLeases::new();
    let link = Partition::new(&store);
    let a = elector(link.clone(), "a");
    let elections = CancellationToken::new();
    let election = tokio::spawn({
        let (a, stop) = (a.clone(), elections.clone());
        async move { a.run(stop).await }
    });
    let calls = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let (counter, flag) = (calls.clone(), dropped.clone());
    let task = Task::new("leader-only", move |_cancel: CancellationToken| {
        counter.fetch_add(1, Ordering::SeqCst);
        let guard = SetOnDrop(flag.clone());
        async move {
            let _guard = guard;
            std::future::pending::<()>().await;
            Ok(())
        }
    });
    let (_syncing, pending) = watch::channel(0usize);
    let shutdown = CancellationToken::new();
    let run = spawn_drive(task, &shutdown, Some(a.clone()), pending);

    let term = leading(&a).await;
    settle().await;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "called for the first term");
    // Renewals fail: the term ends at the renew deadline; the task is dropped at once.
    link.fail.store(true, Ordering::SeqCst);
    term.cancelled().await;
    settle().await;
    assert!(
        dropped.load(Ordering::SeqCst),
        "dropped when the term ended"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // Healed, the replica leads again (after its own lease expired): a new call.
    link.heal();
    tokio::time::timeout(LEASE * 4, leading(&a)).await.unwrap();
    settle().await;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "called again for the new term"
    );

    shutdown.cancel();
    run.await.unwrap();
    elections.cancel();
    election.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn on_a_standby_only_tasks_not_needing_leader_election_run() {
    let store = FakeLeases::new();
    let a = elector(store.clone(), "a");
    let b = elector(store.clone(), "b");
    let elections = CancellationToken::new();
    let election_a = tokio::spawn({
        let (a, stop) = (a.clone(), elections.clone());
        async move { a.run(stop).await }
    });
    leading(&a).await;
    let election_b = tokio::spawn({
        let (b, stop) = (b.clone(), elections.clone());
        async move { b.run(stop).await }
    });

    let (leader_calls, leader_stopped) = Default::default();
    let (every_calls, every_stopped) = Default::default();
    let (_syncing, pending) = watch::channel(0usize);
    let shutdown = CancellationToken::new();
    let leader_only = spawn_drive(
        counting(&leader_calls, &leader_stopped),
        &shutdown,
        Some(b.clone()),
        pending.clone(),
    );
    let everywhere = spawn_drive(
        counting(&every_calls, &every_stopped).needs_leader_election(false),
        &shutdown,
        Some(b.clone()),
        pending,
    );
    tokio::time::sleep(LEASE).await;
    assert!(!b.is_leader());
    assert_eq!(leader_calls.load(Ordering::SeqCst), 0, "b does not lead");
    assert_eq!(every_calls.load(Ordering::SeqCst), 1, "runs on a standby");

    shutdown.cancel();
    leader_only.await.unwrap();
    everywhere.await.unwrap();
    assert!(every_stopped.load(Ordering::SeqCst));
    elections.cancel();
    election_a.await.unwrap();
    election_b.await.unwrap();
}
