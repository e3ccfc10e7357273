//! client-go's unit tests of `ExpirationCache` and `UndeltaStore` (`tools/cache`), ported onto
//! this library's [`ExpirationCache`] and [`UndeltaStore`] to find behaviour that differs from
//! client-go (v0.36).
//!
//! Each test is named after the Go test it ports (`<go file>_<go test>` in snake case) and
//! says which one in its first comment. Where this library deliberately differs and
//! documents it, the test asserts the documented behaviour and says so.
//!
//! Sources: `expiration_cache_test.go` (with `expiration_cache_fakes.go`),
//! `undelta_store_test.go`, and `TestUndeltaStore` of `store_test.go`.
//!
//! Adaptations:
//! - client-go's `FakeExpirationPolicy` (every key expires but those in `NeverExpire`) is a
//!   closure here ([`FakeExpirationPolicy`] below builds it), since any
//!   `Fn(&TimestampedEntry<K>, Instant) -> bool` is an [`ExpirationPolicy`].
//! - `NewFakeExpirationStore` reports each key its storage deletes on a channel. This cache
//!   has no such hook; the ports observe the removal through the policy instead: a read of
//!   the whole cache ([`Store::list_keys`]) asks the policy about every entry the cache still
//!   holds, so a key it is not asked about was removed ([`FakeExpirationPolicy::held`]).
//! - The policy is given the cache's time (`is_expired(entry, now)`) instead of holding a
//!   clock of its own (`TTLPolicy{TTL, Clock}`): `TestTTLPolicy` passes the fake clock's time.
//! - Times are monotonic [`Instant`]s, not wall-clock `time.Time`s.
//!
//! Not ported:
//! - The `ttl = -1` case of `TestTTLPolicy`: a [`Duration`] cannot be negative; zero, which
//!   client-go treats the same way (never expire), is tested.

mod client_go {
    pub mod store_test;
}

use client_go::store_test::{StoreObj, do_test_store, store_obj, store_obj_key};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use informer_core::store::{
    Clock, ExpirationCache, ExpirationPolicy, FakeClock, Store, TimestampedEntry, TtlPolicy,
    UndeltaStore,
};
use informer_core::{KeyError, ObjectKey};

// =====================================================================================
// expiration_cache_test.go
// =====================================================================================

/// client-go's `FakeExpirationPolicy`: every entry has expired but those whose key is in
/// `never_expire`. It also records the keys it is asked about, which shows what the cache
/// still holds (see the file's header).
#[derive(Clone, Default)]
struct FakeExpirationPolicy {
    never_expire: Arc<Mutex<HashSet<String>>>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl FakeExpirationPolicy {
    fn never_expiring(ids: &[&str]) -> Self {
        let policy = Self::default();
        policy.set_never_expire(ids);
        policy
    }

    /// client-go's `exp.NeverExpire = sets.New(ids...)`.
    fn set_never_expire(&self, ids: &[&str]) {
        *self.never_expire.lock().unwrap() = ids.iter().map(|id| (*id).to_owned()).collect();
    }

    /// The policy as the cache takes it.
    fn policy(&self) -> impl ExpirationPolicy<StoreObj> + 'static {
        let (never_expire, asked) = (self.never_expire.clone(), self.asked.clone());
        move |entry: &TimestampedEntry<StoreObj>, _now: Instant| {
            asked.lock().unwrap().push(entry.key.to_string());
            !never_expire.lock().unwrap().contains(&entry.object.id)
        }
    }

    /// Every key `cache` still holds, expired or not (client-go: not yet deleted from its
    /// storage): the keys a whole read asks the policy about. The read removes the expired
    /// ones it finds.
    fn held(&self, cache: &ExpirationCache<StoreObj>) -> Vec<String> {
        self.asked.lock().unwrap().clear();
        cache.list_keys();
        let mut held = std::mem::take(&mut *self.asked.lock().unwrap());
        held.sort();
        held
    }
}

/// client-go's `NewFakeExpirationStore(testStoreKeyFunc, deleteChan, policy, clock)`.
fn fake_expiration_store(
    policy: &FakeExpirationPolicy,
    clock: impl Clock + 'static,
) -> ExpirationCache<StoreObj> {
    ExpirationCache::with_key_fn(store_obj_key, Duration::ZERO)
        .with_policy(policy.policy())
        .with_clock(clock)
}

// Go: TestTTLExpirationBasic
#[test]
fn expiration_cache_test_ttl_expiration_basic() {
    let policy = FakeExpirationPolicy::never_expiring(&[]);
    let ttl_store = fake_expiration_store(&policy, informer_core::store::RealClock);
    let test_obj = store_obj("foo", "bar");
    ttl_store.add(test_obj.clone()).unwrap();

    let key = store_obj_key(&test_obj).unwrap();
    assert!(ttl_store.get(&key).is_none(), "got an expired item");
    // Go waits for the storage to report the delete of "foo".
    assert!(
        policy.held(&ttl_store).is_empty(),
        "the get removed the expired entry"
    );
}

// Go: TestReAddExpiredItem
#[test]
fn expiration_cache_test_re_add_expired_item() {
    let exp = FakeExpirationPolicy::never_expiring(&[]);
    let ttl_store = fake_expiration_store(&exp, informer_core::store::RealClock);
    let test_key = "foo";
    let test_obj = store_obj(test_key, "bar");
    ttl_store.add(test_obj.clone()).unwrap();

    // This get will expire the item.
    let key = store_obj_key(&test_obj).unwrap();
    assert!(ttl_store.get(&key).is_none(), "got an expired item");
    // Go waits for the storage to report the delete of "foo" (sent by the get above).
    assert!(exp.held(&ttl_store).is_empty(), "the get removed foo");

    let different_value = "different_bar";
    ttl_store
        .add(store_obj(test_key, different_value))
        .expect("second value added");

    exp.set_never_expire(&[test_key]);
    let item = ttl_store
        .get(&ObjectKey::cluster(test_key))
        .expect("the re-added item, now never expiring");
    assert_eq!(item.val, different_value);
}

// Go: TestTTLList
#[test]
fn expiration_cache_test_ttl_list() {
    let test_objs = [
        store_obj("foo", "bar"),
        store_obj("foo1", "bar1"),
        store_obj("foo2", "bar2"),
    ];
    let policy = FakeExpirationPolicy::never_expiring(&["foo1"]);
    let ttl_store = fake_expiration_store(&policy, informer_core::store::RealClock);
    for obj in &test_objs {
        ttl_store.add(obj.clone()).unwrap();
    }
    let list_objs = ttl_store.list();
    assert_eq!(list_objs.len(), 1, "list returned {list_objs:?}");
    assert_eq!(list_objs[0], test_objs[1]);

    // Go waits for the storage to report the deletes of foo and foo2 (sent by the List).
    assert_eq!(
        policy.held(&ttl_store),
        ["foo1"],
        "the list removed the expired foo and foo2"
    );
}

// Go: TestTTLPolicy
#[test]
fn expiration_cache_test_ttl_policy() {
    // An hour past the system's clock, so that times before it exist.
    let fake_time = FakeClock::starting_at(Instant::now() + Duration::from_secs(3600));
    let now = fake_time.now();
    let ttl = Duration::from_secs(30);
    let exactly_on_ttl = now - ttl;
    let expired_time = now - (ttl + Duration::from_nanos(1));

    let policy = TtlPolicy::new(ttl);
    let item = store_obj("foo", "bar");
    let mut entry = TimestampedEntry {
        key: store_obj_key(&item).unwrap(),
        object: item,
        timestamp: exactly_on_ttl,
    };
    assert!(
        !policy.is_expired(&entry, now),
        "TTL cache should not expire entries exactly on ttl"
    );
    entry.timestamp = now;
    assert!(
        !policy.is_expired(&entry, now),
        "TTL cache should not expire entries before ttl"
    );
    entry.timestamp = expired_time;
    assert!(
        policy.is_expired(&entry, now),
        "TTL cache should expire entries older than ttl"
    );
    // Go also tries -1: a Duration is never negative (see the header).
    let policy = TtlPolicy::new(Duration::ZERO);
    assert!(
        !policy.is_expired(&entry, now),
        "TTL policy should only expire entries when initialized with a ttl > 0"
    );
}

// =====================================================================================
// undelta_store_test.go
// =====================================================================================

/// client-go's `testUndeltaObject`, keyed by `name` (`testUndeltaKeyFunc`).
#[derive(Debug, PartialEq, Eq)]
struct UndeltaObj {
    name: String,
    val: i64,
}

fn mk_obj(name: &str, val: i64) -> Arc<UndeltaObj> {
    Arc::new(UndeltaObj {
        name: name.to_owned(),
        val,
    })
}

fn undelta_key(o: &UndeltaObj) -> Result<ObjectKey, KeyError> {
    Ok(ObjectKey::cluster(&o.name))
}

/// What the push function saw: how often it was called, and its last argument.
#[derive(Default)]
struct Pushed {
    callcount: usize,
    got: Vec<Arc<UndeltaObj>>,
}

fn recording_store() -> (UndeltaStore<UndeltaObj>, Arc<Mutex<Pushed>>) {
    let pushed: Arc<Mutex<Pushed>> = Arc::default();
    let log = pushed.clone();
    let push = move |m: Vec<Arc<UndeltaObj>>| {
        let mut pushed = log.lock().unwrap();
        pushed.callcount += 1;
        pushed.got = m;
    };
    (UndeltaStore::with_key_fn(undelta_key, push), pushed)
}

// Go: TestUpdateCallsPush
#[test]
fn undelta_store_test_update_calls_push() {
    let (u, pushed) = recording_store();
    u.add(mk_obj("a", 2)).unwrap();
    u.update(mk_obj("a", 1)).unwrap();
    let pushed = pushed.lock().unwrap();
    assert_eq!(pushed.callcount, 2);
    assert_eq!(pushed.got, [mk_obj("a", 1)]);
}

// Go: TestDeleteCallsPush
#[test]
fn undelta_store_test_delete_calls_push() {
    let (u, pushed) = recording_store();
    u.add(mk_obj("a", 2)).unwrap();
    // Go deletes by object (`mkObj("a", "")`); here by key.
    u.delete(&undelta_key(&mk_obj("a", 0)).unwrap());
    let pushed = pushed.lock().unwrap();
    assert_eq!(pushed.callcount, 2);
    assert!(pushed.got.is_empty(), "got {:?}", pushed.got);
}

// Go: TestReadsDoNotCallPush
#[test]
fn undelta_store_test_reads_do_not_call_push() {
    let u = UndeltaStore::with_key_fn(undelta_key, |_: Vec<Arc<UndeltaObj>>| {
        panic!("unexpected call to push!")
    });
    // These should not call push.
    let _ = u.list();
    let _ = u.get(&ObjectKey::cluster("a"));
}

// Go: TestReplaceCallsPush
#[test]
fn undelta_store_test_replace_calls_push() {
    let (u, pushed) = recording_store();
    let m = vec![mk_obj("a", 1)];
    u.replace(m, "0").unwrap();
    let pushed = pushed.lock().unwrap();
    assert_eq!(pushed.callcount, 1);
    assert_eq!(pushed.got, [mk_obj("a", 1)]);
}

// =====================================================================================
// store_test.go
// =====================================================================================

// Go: TestUndeltaStore (doTestStore on NewUndeltaStore with a push function that does nothing)
#[test]
fn store_test_undelta_store() {
    do_test_store(&UndeltaStore::with_key_fn(
        store_obj_key,
        |_: Vec<Arc<StoreObj>>| {},
    ));
}
