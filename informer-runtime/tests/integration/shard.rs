//! Sharding (`informer_runtime::shard`) through a real `kube::Client` against the
//! in-process API server, with short timings (lease 1 s, renew deadline 700 ms, retry
//! 100 ms, handoff 100 ms). "Within" bounds are generous; the safety check (no shard
//! owned by two replicas) runs every millisecond and is strict.

use std::collections::BTreeSet;
use std::time::Duration;

use informer_core::ObjectKey;
use informer_runtime::leader::CancellationToken;
use informer_runtime::shard::{ShardConfig, ShardManager, shard_of};
use informer_testing::TestApiServer;
use tokio::task::JoinHandle;
use tokio::time::Instant;

const SHARDS: u32 = 6;
const LEASE: Duration = Duration::from_millis(1000);
const RENEW: Duration = Duration::from_millis(700);
const RETRY: Duration = Duration::from_millis(100);
const SLACK: Duration = Duration::from_millis(2500);

fn config(id: &str) -> ShardConfig {
    let mut config =
        ShardConfig::new(SHARDS, "ctl", "default", id).with_timings(LEASE, RENEW, RETRY);
    config.handoff_delay = RETRY;
    config
}

struct Replica {
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

fn start(manager: &ShardManager) -> Replica {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let manager = manager.clone();
        let cancel = cancel.clone();
        async move { manager.run(cancel).await }
    });
    Replica { cancel, task }
}

async fn managers(server: &TestApiServer, ids: &[&str]) -> Vec<ShardManager> {
    ids.iter()
        .map(|id| ShardManager::new(server.client(), config(id)))
        .collect()
}

fn assert_disjoint(managers: &[ShardManager]) {
    let mut seen = BTreeSet::new();
    for m in managers {
        for s in m.held() {
            assert!(seen.insert(s), "shard {s} owned by two replicas");
        }
    }
}

/// Checks every millisecond that no shard is owned twice.
fn checker(managers: &[ShardManager]) -> JoinHandle<()> {
    let managers = managers.to_vec();
    tokio::spawn(async move {
        loop {
            assert_disjoint(&managers);
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
}

/// Waits until `managers` own every shard between them in balanced shares.
async fn balanced(managers: &[ShardManager], within: Duration) -> Instant {
    let deadline = Instant::now() + within;
    loop {
        let sizes: Vec<usize> = managers.iter().map(|m| m.held().len()).collect();
        let total: usize = sizes.iter().sum();
        let spread = sizes.iter().max().unwrap() - sizes.iter().min().unwrap();
        if total == SHARDS as usize && spread <= 1 {
            assert_disjoint(managers);
            return Instant::now();
        }
        assert!(
            Instant::now() < deadline,
            "not balanced within {within:?}: {:?}",
            managers.iter().map(ShardManager::held).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn finish(check: JoinHandle<()>) {
    assert!(
        !check.is_finished(),
        "the disjointness check failed (see the panic above)"
    );
    check.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_is_owned_by_exactly_one_replica_once_stable() {
    let server = TestApiServer::start().await.unwrap();
    let managers = managers(&server, &["a", "b", "c"]).await;
    let check = checker(&managers);
    let _replicas: Vec<Replica> = managers.iter().map(start).collect();
    balanced(&managers, Duration::from_secs(10)).await;
    // Stable: the same shares for several lease durations.
    let before: Vec<Vec<u32>> = managers.iter().map(ShardManager::held).collect();
    tokio::time::sleep(LEASE * 2).await;
    let after: Vec<Vec<u32>> = managers.iter().map(ShardManager::held).collect();
    assert_eq!(before, after, "shares moved while nothing happened");
    for held in &after {
        assert_eq!(held.len(), 2);
    }
    for i in 0..2000 {
        let key = ObjectKey::new(Some("ns"), &format!("obj-{i}"));
        let owners: Vec<usize> = (0..3).filter(|&r| managers[r].owns(&key)).collect();
        assert_eq!(owners.len(), 1, "{key} owned by {owners:?}");
        assert!(after[owners[0]].contains(&shard_of(&key, SHARDS)));
    }
    finish(check);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_rebalance_to_the_survivors_after_a_kill() {
    let server = TestApiServer::start().await.unwrap();
    let managers = managers(&server, &["a", "b", "c"]).await;
    let check = checker(&managers);
    let mut replicas: Vec<Replica> = managers.iter().map(start).collect();
    balanced(&managers, Duration::from_secs(10)).await;
    tokio::time::sleep(RETRY * 5).await;
    let orphaned = managers[0].held();
    let victim = replicas.remove(0);
    victim.task.abort();
    let _ = victim.task.await;
    let killed = Instant::now();
    assert!(managers[0].held().is_empty());
    let at = balanced(&managers[1..], LEASE + RETRY * 2 + SLACK).await;
    let took = at - killed;
    // No shard is taken before its lease could have expired.
    assert!(took >= LEASE - RENEW, "rebalanced after only {took:?}");
    for s in orphaned {
        assert!(managers[1].held().contains(&s) || managers[2].held().contains(&s));
    }
    for i in 0..500 {
        let key = ObjectKey::new(Some("ns"), &format!("obj-{i}"));
        assert_eq!(managers[1..].iter().filter(|m| m.owns(&key)).count(), 1);
    }
    finish(check);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn released_shards_move_at_once_on_clean_shutdown() {
    let server = TestApiServer::start().await.unwrap();
    // Leases of ten minutes: a shard that moved within the (generous) wait below was
    // released, not taken over after its lease expired. No wall-clock assertion needed.
    let managers: Vec<ShardManager> = ["a", "b", "c"]
        .iter()
        .map(|id| {
            let mut config =
                config(id).with_timings(Duration::from_secs(600), Duration::from_secs(400), RETRY);
            config.handoff_delay = RETRY;
            ShardManager::new(server.client(), config)
        })
        .collect();
    let check = checker(&managers);
    let mut replicas: Vec<Replica> = managers.iter().map(start).collect();
    balanced(&managers, Duration::from_secs(30)).await;
    let leaving = replicas.remove(0);
    leaving.cancel.cancel();
    leaving.task.await.unwrap();
    assert!(managers[0].held().is_empty());
    balanced(&managers[1..], Duration::from_secs(60)).await;
    finish(check);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_replicas_get_their_share_by_handoff() {
    let server = TestApiServer::start().await.unwrap();
    let managers = managers(&server, &["a", "b", "c"]).await;
    let check = checker(&managers);
    let _a = start(&managers[0]);
    balanced(&managers[..1], Duration::from_secs(5)).await;
    assert_eq!(managers[0].held().len(), SHARDS as usize);
    let _b = start(&managers[1]);
    let _c = start(&managers[2]);
    balanced(&managers, Duration::from_secs(10)).await;
    finish(check);
}
