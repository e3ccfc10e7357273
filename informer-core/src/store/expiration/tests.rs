use std::collections::{BTreeMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use proptest::prelude::*;

use super::*;
use crate::store::FakeClock;

#[derive(Debug, PartialEq, Eq)]
struct Obj {
    name: String,
    val: u32,
}

fn obj(name: &str, val: u32) -> Arc<Obj> {
    Arc::new(Obj {
        name: name.to_owned(),
        val,
    })
}

fn obj_key(o: &Obj) -> Result<ObjectKey, KeyError> {
    if o.name.is_empty() {
        return Err(KeyError::MissingName { kind: "Obj" });
    }
    Ok(ObjectKey::cluster(&o.name))
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::cluster(name)
}

const TTL: Duration = Duration::from_secs(10);
const MS: Duration = Duration::from_millis(1);

/// A cache of `Obj` with a TTL of 10 s on a fake clock.
fn cache() -> (ExpirationCache<Obj>, FakeClock) {
    let clock = FakeClock::new();
    let cache = ExpirationCache::with_key_fn(obj_key, TTL).with_clock(clock.clone());
    (cache, clock)
}

/// How many entries the cache holds, expired ones not yet removed included.
fn stored(cache: &ExpirationCache<Obj>) -> usize {
    cache.state.read().entries.len()
}

fn vals(objs: &[Arc<Obj>]) -> Vec<(String, u32)> {
    let mut v: Vec<_> = objs.iter().map(|o| (o.name.clone(), o.val)).collect();
    v.sort();
    v
}

fn sorted_keys(cache: &ExpirationCache<Obj>) -> Vec<String> {
    let mut keys: Vec<String> = cache.list_keys().iter().map(ToString::to_string).collect();
    keys.sort();
    keys
}

#[test]
fn an_entry_exactly_the_ttl_old_is_live_and_one_older_has_expired() {
    let (cache, clock) = cache();
    cache.add(obj("a", 1)).unwrap();
    clock.advance(TTL);
    assert_eq!(cache.get(&key("a")).map(|o| o.val), Some(1));
    clock.advance(MS);
    assert!(cache.get(&key("a")).is_none());
}

#[test]
fn a_zero_ttl_never_expires() {
    let clock = FakeClock::new();
    let cache = ExpirationCache::with_key_fn(obj_key, Duration::ZERO).with_clock(clock.clone());
    cache.add(obj("a", 1)).unwrap();
    clock.advance(Duration::from_secs(1_000_000));
    assert!(cache.get(&key("a")).is_some());
    assert_eq!(cache.len(), 1);
}

#[test]
fn get_removes_the_expired_entry_it_finds_and_only_that_one() {
    let (cache, clock) = cache();
    cache.add(obj("a", 1)).unwrap();
    cache.add(obj("b", 1)).unwrap();
    clock.advance(TTL + MS);
    assert_eq!(stored(&cache), 2, "nothing is removed before a read");
    assert!(cache.get(&key("a")).is_none());
    assert_eq!(stored(&cache), 1, "get removed a, not b");
    assert!(cache.state.read().entries.contains_key(&key("b")));
}

#[test]
fn whole_reads_leave_out_and_remove_every_expired_entry() {
    type Read = fn(&ExpirationCache<Obj>) -> usize;
    let reads: [(&str, Read); 4] = [
        ("list", |c| c.list().len()),
        ("list_keys", |c| c.list_keys().len()),
        ("len", |c| c.len()),
        ("is_empty", |c| usize::from(!c.is_empty())),
    ];
    for (name, read) in reads {
        let (cache, clock) = cache();
        cache.add(obj("old1", 1)).unwrap();
        cache.add(obj("old2", 1)).unwrap();
        clock.advance(TTL);
        cache.add(obj("young", 1)).unwrap();
        clock.advance(MS);
        assert_eq!(read(&cache), 1, "{name} sees only the live entry");
        assert_eq!(stored(&cache), 1, "{name} removed both expired entries");
    }
    let (cache, clock) = cache();
    cache.add(obj("a", 1)).unwrap();
    clock.advance(TTL + MS);
    assert!(cache.is_empty());
}

#[test]
fn a_read_keeps_an_entry_rewritten_after_it_found_the_old_one_expired() {
    let (cache, clock) = cache();
    cache.add(obj("a", 1)).unwrap();
    clock.advance(TTL + MS);
    // What a read found expired: the entry's write number, taken before the rewrite.
    let seen = cache.state.read().entries[&key("a")].seq;
    cache.add(obj("a", 2)).unwrap();
    cache.purge(&[(key("a"), seen)]);
    assert_eq!(cache.get(&key("a")).map(|o| o.val), Some(2));
}

#[test]
fn a_write_restarts_the_clock_of_what_it_writes() {
    let (cache, clock) = cache();
    cache.add(obj("a", 1)).unwrap();
    clock.advance(TTL);
    cache.update(obj("a", 2)).unwrap();
    clock.advance(TTL);
    assert_eq!(cache.get(&key("a")).map(|o| o.val), Some(2));
    cache.apply(vec![StoreOp::Upsert(obj("a", 3))]).unwrap();
    clock.advance(TTL);
    assert_eq!(cache.get(&key("a")).map(|o| o.val), Some(3));
    clock.advance(MS);
    assert!(cache.get(&key("a")).is_none());
}

#[test]
fn replace_restamps_every_object_with_one_time_unchanged_ones_too() {
    let (cache, clock) = cache();
    let a = obj("a", 1);
    cache.add(a.clone()).unwrap();
    clock.advance(TTL);
    let written = clock.now();
    cache.replace(vec![a, obj("b", 1)], "5").unwrap();
    let state = cache.state.read();
    assert!(state.entries.values().all(|s| s.entry.timestamp == written));
    drop(state);
    clock.advance(TTL);
    assert_eq!(cache.len(), 2);
}

#[test]
fn writes_see_expired_entries_as_absent() {
    let (cache, clock) = cache();
    for name in ["add", "del", "rep", "gone", "app"] {
        cache.add(obj(name, 1)).unwrap();
    }
    clock.advance(TTL + MS);
    assert!(
        cache.add(obj("add", 2)).unwrap().is_none(),
        "an add over it"
    );
    assert!(cache.delete(&key("del")).is_none(), "a delete of it");
    assert!(!cache.state.read().entries.contains_key(&key("del")));
    let previous = cache.apply(vec![StoreOp::Upsert(obj("app", 2))]).unwrap();
    assert!(previous[0].is_none(), "an apply over it");
    let diff = cache
        .replace(vec![obj("rep", 2), obj("add", 3)], "1")
        .unwrap();
    assert_eq!(vals(&diff.added), [("rep".to_owned(), 2)]);
    assert_eq!(diff.updated.len(), 1, "add@2 was written after the expiry");
    assert!(
        diff.deleted.iter().all(|(k, _)| k != &key("gone")),
        "an expired entry the list drops is not reported deleted"
    );
    assert_eq!(diff.deleted.len(), 1, "app@2 is live and dropped");
}

#[test]
fn writes_return_the_live_object_they_replaced() {
    let (cache, _clock) = cache();
    let a1 = obj("a", 1);
    assert!(cache.add(a1.clone()).unwrap().is_none());
    let replaced = cache.update(obj("a", 2)).unwrap().unwrap();
    assert!(Arc::ptr_eq(&replaced, &a1));
    assert_eq!(cache.delete(&key("a")).map(|o| o.val), Some(2));
    assert!(cache.delete(&key("a")).is_none());
}

#[test]
fn replace_reports_what_it_added_updated_and_deleted_and_the_last_of_a_duplicate_wins() {
    let (cache, _clock) = cache();
    cache.add(obj("kept", 1)).unwrap();
    cache.add(obj("dropped", 1)).unwrap();
    let diff = cache
        .replace(
            vec![obj("kept", 2), obj("new", 1), obj("new", 2), obj("kept", 3)],
            "9",
        )
        .unwrap();
    assert_eq!(vals(&diff.added), [("new".to_owned(), 2)]);
    assert_eq!(diff.updated.len(), 1);
    assert_eq!((diff.updated[0].0.val, diff.updated[0].1.val), (1, 3));
    assert_eq!(diff.deleted.len(), 1);
    assert_eq!(diff.deleted[0].0, key("dropped"));
    assert_eq!(
        vals(&cache.list()),
        [("kept".to_owned(), 3), ("new".to_owned(), 2)]
    );
}

#[test]
fn apply_writes_in_order_and_returns_what_each_operation_replaced() {
    let (cache, _clock) = cache();
    cache.add(obj("a", 1)).unwrap();
    let previous = cache
        .apply(vec![
            StoreOp::Upsert(obj("a", 2)),
            StoreOp::Upsert(obj("b", 1)),
            StoreOp::Delete(key("a")),
            StoreOp::Upsert(obj("b", 2)),
            StoreOp::Delete(key("missing")),
        ])
        .unwrap();
    let previous: Vec<Option<u32>> = previous.iter().map(|p| p.as_ref().map(|o| o.val)).collect();
    assert_eq!(previous, [Some(1), None, Some(2), Some(1), None]);
    assert_eq!(vals(&cache.list()), [("b".to_owned(), 2)]);
}

#[test]
fn a_write_with_an_object_without_a_key_changes_nothing() {
    let (cache, _clock) = cache();
    cache.add(obj("a", 1)).unwrap();
    let missing = StoreError::Key(KeyError::MissingName { kind: "Obj" });
    assert_eq!(cache.add(obj("", 1)).unwrap_err(), missing);
    assert_eq!(
        cache
            .replace(vec![obj("b", 1), obj("", 1)], "3")
            .unwrap_err(),
        missing
    );
    assert_eq!(
        cache
            .apply(vec![StoreOp::Delete(key("a")), StoreOp::Upsert(obj("", 1))])
            .unwrap_err(),
        missing
    );
    assert_eq!(vals(&cache.list()), [("a".to_owned(), 1)]);
    assert_eq!(cache.resource_version(), None);
}

#[test]
fn a_panicking_policy_leaves_the_cache_as_it_was() {
    let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let trigger = armed.clone();
    let cache = ExpirationCache::with_key_fn(obj_key, Duration::ZERO).with_policy(
        move |_: &TimestampedEntry<Obj>, _: Instant| {
            assert!(!trigger.load(Ordering::SeqCst), "policy failed");
            false
        },
    );
    cache.add(obj("a", 1)).unwrap();
    cache.add(obj("b", 1)).unwrap();
    armed.store(true, Ordering::SeqCst);
    let writes: [&dyn Fn(); 4] = [
        &|| drop(cache.add(obj("a", 2))),
        &|| drop(cache.delete(&key("a"))),
        &|| drop(cache.replace(vec![obj("a", 2), obj("c", 1)], "7")),
        &|| {
            drop(cache.apply(vec![
                StoreOp::Upsert(obj("c", 1)),
                StoreOp::Upsert(obj("a", 2)),
            ]))
        },
    ];
    for write in writes {
        assert!(catch_unwind(AssertUnwindSafe(write)).is_err());
    }
    armed.store(false, Ordering::SeqCst);
    assert_eq!(
        vals(&cache.list()),
        [("a".to_owned(), 1), ("b".to_owned(), 1)]
    );
    assert_eq!(cache.resource_version(), None);
}

#[test]
fn the_policy_is_asked_with_the_time_of_the_cache_clock() {
    let clock = FakeClock::new();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    let cache = ExpirationCache::with_key_fn(obj_key, Duration::ZERO)
        .with_policy(move |e: &TimestampedEntry<Obj>, now: Instant| {
            log.lock().unwrap().push((e.timestamp, now));
            false
        })
        .with_clock(clock.clone());
    let written = clock.now();
    cache.add(obj("a", 1)).unwrap();
    clock.advance(Duration::from_secs(7));
    cache.get(&key("a"));
    assert_eq!(
        *asked.lock().unwrap(),
        [(written, written + Duration::from_secs(7))]
    );
}

#[test]
fn a_custom_policy_decides_alone() {
    let never_expire: Arc<Mutex<HashSet<String>>> = Arc::default();
    let set = never_expire.clone();
    let cache = ExpirationCache::with_key_fn(obj_key, TTL).with_policy(
        move |e: &TimestampedEntry<Obj>, _: Instant| !set.lock().unwrap().contains(&e.object.name),
    );
    never_expire.lock().unwrap().insert("a".into());
    cache.add(obj("a", 1)).unwrap();
    cache.add(obj("b", 1)).unwrap();
    assert_eq!(sorted_keys(&cache), ["a"], "b expired at once, TTL or not");
}

#[test]
fn the_resource_version_is_set_by_replace_and_set_resource_version_only() {
    let (cache, _clock) = cache();
    cache.add(obj("a", 1)).unwrap();
    assert_eq!(cache.resource_version(), None);
    cache.replace(vec![obj("a", 1)], "4").unwrap();
    assert_eq!(cache.resource_version().as_deref(), Some("4"));
    cache.set_resource_version("12");
    cache.apply(vec![StoreOp::Upsert(obj("b", 1))]).unwrap();
    assert_eq!(cache.resource_version().as_deref(), Some("12"));
}

#[test]
fn only_a_resource_keyed_cache_takes_keys_by_resource_key() {
    assert!(ExpirationCache::<ConfigMap>::new(TTL).keys_by_resource_key());
    assert!(!ExpirationCache::with_key_fn(obj_key, TTL).keys_by_resource_key());
}

#[test]
fn update_with_key_files_the_object_under_the_given_key() {
    let (cache, _clock) = cache();
    cache.update_with_key(key("given"), obj("a", 1)).unwrap();
    assert_eq!(cache.get(&key("given")).map(|o| o.val), Some(1));
    assert!(cache.get(&key("a")).is_none());
}

#[test]
fn readers_do_not_block_one_another() {
    // Two gets ask the policy at the same time: each waits, in the policy, for the other.
    let inside = Arc::new(AtomicUsize::new(0));
    let count = inside.clone();
    let cache = ExpirationCache::with_key_fn(obj_key, Duration::ZERO).with_policy(
        move |_: &TimestampedEntry<Obj>, _: Instant| {
            count.fetch_add(1, Ordering::SeqCst);
            let deadline = Instant::now() + Duration::from_secs(10);
            while count.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
                std::thread::yield_now();
            }
            false
        },
    );
    cache.add(obj("a", 1)).unwrap();
    let both = std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    cache.get(&key("a"));
                    inside.load(Ordering::SeqCst)
                })
            })
            .collect();
        readers
            .into_iter()
            .map(|r| r.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert_eq!(both, [2, 2], "both readers were in the policy at once");
}

#[test]
fn debug_shows_the_entry_count_without_asking_the_policy() {
    let (cache, clock) = cache();
    cache.add(obj("a", 1)).unwrap();
    clock.advance(TTL + MS);
    let shown = format!("{cache:?}");
    assert!(shown.contains("entries: 1"), "{shown}");
    assert_eq!(stored(&cache), 1);
}

// ---------- against a model ----------

#[derive(Debug, Clone)]
enum Op {
    Add(u8, u32),
    Delete(u8),
    Replace(Vec<(u8, u32)>),
    Apply(Vec<(u8, Option<u32>)>),
    Get(u8),
    List,
    ListKeys,
    Len,
    /// Milliseconds.
    Advance(u16),
}

fn op() -> impl Strategy<Value = Op> {
    let name = 0u8..5;
    prop_oneof![
        (name.clone(), 0u32..100).prop_map(|(n, v)| Op::Add(n, v)),
        name.clone().prop_map(Op::Delete),
        prop::collection::vec((name.clone(), 0u32..100), 0..6).prop_map(Op::Replace),
        prop::collection::vec((name.clone(), prop::option::of(0u32..100)), 0..6)
            .prop_map(Op::Apply),
        name.prop_map(Op::Get),
        Just(Op::List),
        Just(Op::ListKeys),
        Just(Op::Len),
        (0u16..15_000).prop_map(Op::Advance),
    ]
}

/// The model: name → (value, write time in ms); live while `now - written <= TTL`.
struct Model {
    entries: BTreeMap<u8, (u32, u64)>,
    now: u64,
}

impl Model {
    fn live(&self, n: u8) -> Option<u32> {
        let ttl = u64::try_from(TTL.as_millis()).unwrap();
        self.entries
            .get(&n)
            .filter(|(_, at)| self.now - at <= ttl)
            .map(|(v, _)| *v)
    }
    fn all_live(&self) -> Vec<(String, u32)> {
        self.entries
            .keys()
            .filter_map(|&n| self.live(n).map(|v| (format!("o{n}"), v)))
            .collect()
    }
}

fn name(n: u8) -> String {
    format!("o{n}")
}

proptest! {
    #[test]
    fn the_cache_behaves_as_a_map_with_a_ttl(ops in prop::collection::vec(op(), 1..60)) {
        let (cache, clock) = cache();
        let mut model = Model { entries: BTreeMap::new(), now: 0 };
        for op in ops {
            match op {
                Op::Add(n, v) => {
                    let got = cache.add(obj(&name(n), v)).unwrap().map(|o| o.val);
                    prop_assert_eq!(got, model.live(n));
                    model.entries.insert(n, (v, model.now));
                }
                Op::Delete(n) => {
                    let got = cache.delete(&key(&name(n))).map(|o| o.val);
                    prop_assert_eq!(got, model.live(n));
                    model.entries.remove(&n);
                }
                Op::Replace(list) => {
                    let diff = cache
                        .replace(list.iter().map(|&(n, v)| obj(&name(n), v)).collect(), "1")
                        .unwrap();
                    let mut last: BTreeMap<u8, u32> = BTreeMap::new();
                    for &(n, v) in &list {
                        last.insert(n, v);
                    }
                    let mut added = Vec::new();
                    let mut updated = Vec::new();
                    for (&n, &v) in &last {
                        match model.live(n) {
                            Some(old) => updated.push((name(n), old, v)),
                            None => added.push((name(n), v)),
                        }
                    }
                    let deleted: Vec<(String, u32)> = model
                        .entries
                        .keys()
                        .filter(|n| !last.contains_key(n))
                        .filter_map(|&n| model.live(n).map(|v| (name(n), v)))
                        .collect();
                    prop_assert_eq!(vals(&diff.added), added);
                    let mut got_updated: Vec<_> = diff
                        .updated
                        .iter()
                        .map(|(o, n)| (n.name.clone(), o.val, n.val))
                        .collect();
                    got_updated.sort();
                    prop_assert_eq!(got_updated, updated);
                    let mut got_deleted: Vec<_> = diff
                        .deleted
                        .iter()
                        .map(|(k, o)| (k.to_string(), o.val))
                        .collect();
                    got_deleted.sort();
                    prop_assert_eq!(got_deleted, deleted);
                    model.entries = last.into_iter().map(|(n, v)| (n, (v, model.now))).collect();
                }
                Op::Apply(batch) => {
                    let ops = batch
                        .iter()
                        .map(|&(n, v)| match v {
                            Some(v) => StoreOp::Upsert(obj(&name(n), v)),
                            None => StoreOp::Delete(key(&name(n))),
                        })
                        .collect();
                    let got: Vec<Option<u32>> =
                        cache.apply(ops).unwrap().iter().map(|p| p.as_ref().map(|o| o.val)).collect();
                    let mut want = Vec::new();
                    for &(n, v) in &batch {
                        want.push(model.live(n));
                        match v {
                            Some(v) => { model.entries.insert(n, (v, model.now)); }
                            None => { model.entries.remove(&n); }
                        }
                    }
                    prop_assert_eq!(got, want);
                }
                Op::Get(n) => {
                    prop_assert_eq!(cache.get(&key(&name(n))).map(|o| o.val), model.live(n));
                }
                Op::List => prop_assert_eq!(vals(&cache.list()), model.all_live()),
                Op::ListKeys => {
                    let want: Vec<String> = model.all_live().into_iter().map(|(k, _)| k).collect();
                    prop_assert_eq!(sorted_keys(&cache), want);
                }
                Op::Len => prop_assert_eq!(cache.len(), model.all_live().len()),
                Op::Advance(ms) => {
                    clock.advance(Duration::from_millis(u64::from(ms)));
                    model.now += u64::from(ms);
                }
            }
        }
    }
}
