//! The shard manager against the in-memory fake, under paused tokio time.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use informer_core::ObjectKey;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::balance::member_lease_name;
use super::{ShardConfig, ShardManager, shard_of};
use crate::lease::api::LeaseApi;
use crate::lease::fake::{FakeLeases, Partition};
use crate::lease::record::LeaseRecord;

const SHARDS: u32 = 8;
const LEASE: Duration = Duration::from_secs(15);
const RETRY: Duration = Duration::from_secs(2);

fn manager(api: Arc<dyn LeaseApi>, id: &str) -> ShardManager {
    ShardManager::with_api(api, ShardConfig::new(SHARDS, "ctl", "default", id)).unwrap()
}

struct Running {
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

fn start(manager: &ShardManager) -> Running {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let manager = manager.clone();
        let cancel = cancel.clone();
        async move { manager.run(cancel).await }
    });
    Running { cancel, task }
}

/// Panics if two managers own the same shard.
fn assert_disjoint(managers: &[ShardManager]) {
    let mut seen = BTreeSet::new();
    for m in managers {
        for s in m.held() {
            assert!(
                seen.insert(s),
                "shard {s} owned twice: {:?}",
                helds(managers)
            );
        }
    }
}

fn helds(managers: &[ShardManager]) -> Vec<Vec<u32>> {
    managers.iter().map(ShardManager::held).collect()
}

/// Spawns a task that checks disjointness every 5 ms of simulated time.
fn checker(managers: &[ShardManager]) -> JoinHandle<()> {
    let managers = managers.to_vec();
    tokio::spawn(async move {
        loop {
            assert_disjoint(&managers);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
}

/// Waits until every shard is owned, the shares are balanced, and returns the time.
async fn balanced(managers: &[ShardManager]) -> Instant {
    loop {
        let sizes: Vec<usize> = managers.iter().map(|m| m.held().len()).collect();
        let total: usize = sizes.iter().sum();
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        if total == SHARDS as usize && max - min <= 1 {
            assert_disjoint(managers);
            return Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn shard_of_is_stable_fnv1a_of_the_key_string() {
    // Fixed forever: changing these moves keys between replicas during upgrades.
    let web = ObjectKey::new(Some("default"), "web-0");
    assert_eq!(shard_of(&web, 16), 6);
    assert_eq!(shard_of(&web, 7), 5);
    assert_eq!(shard_of(&web, 1024), 726);
    let dns = ObjectKey::new(Some("kube-system"), "coredns");
    assert_eq!(shard_of(&dns, 16), 7);
    assert_eq!(shard_of(&dns, 1024), 823);
    let node = ObjectKey::cluster("node-1");
    assert_eq!(shard_of(&node, 16), 3);
    assert_eq!(shard_of(&node, 7), 0);
}

#[test]
fn shard_of_is_below_the_shard_count_and_zero_shards_means_one() {
    for i in 0..1000 {
        let key = ObjectKey::new(Some("ns"), &format!("obj-{i}"));
        assert!(shard_of(&key, 5) < 5);
        assert_eq!(shard_of(&key, 0), 0);
        assert_eq!(shard_of(&key, 1), 0);
    }
}

#[test]
fn invalid_config_is_rejected() {
    let store = FakeLeases::new();
    for config in [
        ShardConfig::new(0, "ctl", "default", "a"),
        ShardConfig::new(4, "Bad_Prefix", "default", "a"),
        ShardConfig::new(4, "ctl", "", "a"),
        ShardConfig::new(4, "ctl", "default", ""),
        ShardConfig::new(4, "ctl", "default", "a").with_timings(RETRY, RETRY, RETRY),
    ] {
        assert!(ShardManager::with_api(store.clone(), config).is_err());
    }
}

#[tokio::test(start_paused = true)]
async fn a_single_replica_holds_every_shard_and_owns_every_key() {
    let store = FakeLeases::new();
    let a = manager(store.clone(), "a");
    let _run = start(&a);
    balanced(std::slice::from_ref(&a)).await;
    assert_eq!(a.held(), (0..SHARDS).collect::<Vec<_>>());
    for i in 0..100 {
        assert!(a.owns(&ObjectKey::new(Some("ns"), &format!("k{i}"))));
    }
    let lease = store.lease("ctl-3").expect("shard lease");
    assert_eq!(LeaseRecord::from_lease(&lease).holder, "a");
    assert!(store.lease(&member_lease_name("ctl", "a")).is_some());
}

#[tokio::test(start_paused = true)]
async fn replicas_converge_to_balanced_disjoint_shares() {
    let store = FakeLeases::new();
    let managers: Vec<ShardManager> = ["a", "b", "c"]
        .iter()
        .map(|id| manager(store.clone(), id))
        .collect();
    let check = checker(&managers);
    let _runs: Vec<Running> = managers.iter().map(start).collect();
    let t0 = Instant::now();
    let at = balanced(&managers).await;
    assert!(at - t0 <= RETRY * 5, "balanced after {:?}", at - t0);
    // Stays balanced.
    tokio::time::sleep(LEASE * 4).await;
    let mut sizes: Vec<usize> = managers.iter().map(|m| m.held().len()).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [2, 3, 3]);
    // Every key is owned by exactly one replica.
    for i in 0..1000 {
        let key = ObjectKey::new(Some("ns"), &format!("obj-{i}"));
        assert_eq!(managers.iter().filter(|m| m.owns(&key)).count(), 1, "{key}");
    }
    assert!(!check.is_finished());
    check.abort();
}

#[tokio::test(start_paused = true)]
async fn a_dead_replicas_shards_move_to_the_survivors_after_the_lease_expires() {
    let store = FakeLeases::new();
    let managers: Vec<ShardManager> = ["a", "b", "c"]
        .iter()
        .map(|id| manager(store.clone(), id))
        .collect();
    let check = checker(&managers);
    let mut runs: Vec<Running> = managers.iter().map(start).collect();
    balanced(&managers).await;
    tokio::time::sleep(LEASE).await;
    let victim = runs.remove(0);
    victim.task.abort();
    let _ = victim.task.await;
    let killed = Instant::now();
    assert!(managers[0].held().is_empty(), "an aborted run owns nothing");
    let at = balanced(&managers[1..]).await;
    let took = at - killed;
    // Not before the lease could expire (the victim last renewed ≤ one retry before
    // the kill), and within lease + a tick or two.
    assert!(took >= LEASE - RETRY, "took over after {took:?}");
    assert!(took <= LEASE + RETRY * 2, "took over after {took:?}");
    assert!(!check.is_finished());
    check.abort();
}

#[tokio::test(start_paused = true)]
async fn clean_shutdown_hands_shards_over_at_once() {
    let store = FakeLeases::new();
    let managers: Vec<ShardManager> = ["a", "b", "c"]
        .iter()
        .map(|id| manager(store.clone(), id))
        .collect();
    let check = checker(&managers);
    let mut runs: Vec<Running> = managers.iter().map(start).collect();
    balanced(&managers).await;
    let leaving = runs.remove(0);
    leaving.cancel.cancel();
    assert!(managers[0].held().is_empty() || !leaving.task.is_finished());
    leaving.task.await.unwrap();
    assert!(managers[0].held().is_empty());
    assert!(
        store.lease(&member_lease_name("ctl", "a")).is_none(),
        "membership lease deleted"
    );
    let left = Instant::now();
    let at = balanced(&managers[1..]).await;
    assert!(at - left <= RETRY * 2, "took over after {:?}", at - left);
    assert!(!check.is_finished());
    check.abort();
}

#[tokio::test(start_paused = true)]
async fn a_new_replica_gets_its_share_through_handoff() {
    let store = FakeLeases::new();
    let managers: Vec<ShardManager> = ["a", "b", "c"]
        .iter()
        .map(|id| manager(store.clone(), id))
        .collect();
    let check = checker(&managers);
    let _a = start(&managers[0]);
    balanced(&managers[..1]).await;
    let _b = start(&managers[1]);
    let _c = start(&managers[2]);
    let joined = Instant::now();
    let at = balanced(&managers).await;
    // A tick to see the members, the handoff delay, a tick to take the shards.
    assert!(at - joined <= RETRY * 5, "balanced after {:?}", at - joined);
    assert!(!check.is_finished());
    check.abort();
}

#[tokio::test(start_paused = true)]
async fn a_handed_off_shard_is_not_owned_while_its_lease_is_still_held() {
    let store = FakeLeases::new();
    let a = manager(store.clone(), "a");
    let _a = start(&a);
    balanced(std::slice::from_ref(&a)).await;
    let mut held = a.subscribe();
    held.borrow_and_update();
    let b = manager(store.clone(), "b");
    let _b = start(&b);
    held.changed().await.unwrap();
    let now_held = held.borrow_and_update().clone();
    assert_eq!(
        now_held.len(),
        (SHARDS / 2) as usize,
        "a's target with two members"
    );
    let given: Vec<u32> = (0..SHARDS).filter(|s| !now_held.contains(s)).collect();
    for s in &given {
        // Still leased by a (renewed during the handoff delay), yet not owned.
        let lease = store.lease(&format!("ctl-{s}")).unwrap();
        assert_eq!(LeaseRecord::from_lease(&lease).holder, "a");
        assert!(!b.held().contains(s));
    }
    balanced(&[a, b]).await;
}

#[tokio::test(start_paused = true)]
async fn renew_failure_drops_shards_at_the_renew_deadline_before_anyone_takes_them() {
    let store = FakeLeases::new();
    let link = Partition::new(&store);
    let a = manager(link.clone(), "a");
    let b = manager(store.clone(), "b");
    let managers = [a.clone(), b.clone()];
    let check = checker(&managers);
    let _a = start(&a);
    let _b = start(&b);
    balanced(&managers).await;
    link.fail.store(true, Ordering::SeqCst);
    let failed = Instant::now();
    let mut held = a.subscribe();
    while !held.borrow_and_update().is_empty() {
        held.changed().await.unwrap();
    }
    let dropped = Instant::now() - failed;
    assert!(
        dropped <= Duration::from_secs(10),
        "dropped after {dropped:?}"
    );
    let at = balanced(&managers[1..]).await;
    assert!(at - failed <= LEASE + RETRY * 2);
    assert!(!check.is_finished());
    check.abort();
}

#[tokio::test(start_paused = true)]
async fn shards_stay_disjoint_under_partitions_stalls_lost_responses_and_crashes() {
    let store = FakeLeases::new();
    let ids = ["a", "b", "c"];
    let links: Vec<Arc<Partition>> = ids.iter().map(|_| Partition::new(&store)).collect();
    let managers: Vec<ShardManager> = ids
        .iter()
        .zip(&links)
        .map(|(id, link)| manager(link.clone(), id))
        .collect();
    let check = checker(&managers);
    let mut runs: Vec<Running> = managers.iter().map(start).collect();
    let mut rng = StdRng::seed_from_u64(0xfeed);
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
                runs[i].task.abort();
                let _ = (&mut runs[i].task).await;
                runs[i] = start(&managers[i]);
            }
            4 => {
                runs[i].cancel.cancel();
                let _ = tokio::time::timeout(Duration::from_secs(30), &mut runs[i].task).await;
                runs[i] = start(&managers[i]);
            }
            _ => link.heal(),
        }
    }
    for link in &links {
        link.heal();
    }
    let healed = Instant::now();
    let at = tokio::time::timeout(Duration::from_secs(120), balanced(&managers)).await;
    assert!(
        at.is_ok(),
        "not balanced {:?} after healing: {:?}",
        Instant::now() - healed,
        helds(&managers)
    );
    assert!(!check.is_finished());
    check.abort();
}
