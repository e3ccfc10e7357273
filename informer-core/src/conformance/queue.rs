//! [`check_queue`]: the rules of [`Queue`], one at a time, on fresh queues.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use crate::key::ObjectKey;
use crate::queue::{PRIORITY_LOW, Queue};

/// How long the check waits for an item it expects (generous: the check is not a
/// benchmark).
const PATIENCE: Duration = Duration::from_secs(5);
/// How long the check waits to be sure an item it does not expect does not come.
const QUIET: Duration = Duration::from_millis(100);
/// How long the check waits for an item given to `add_rate_limited`: the queue's rate
/// limiter must give a first failure a shorter delay than this.
const RETRY_PATIENCE: Duration = Duration::from_secs(60);
/// The delays the check gives `add_after` when it waits for them to pass.
const SHORT: Duration = Duration::from_millis(200);
const LONGER: Duration = Duration::from_millis(300);
/// How long the check sleeps to be past [`LONGER`].
const PAST: Duration = Duration::from_millis(400);

/// Checks the queues `make` returns against the guarantees of [`Queue`] and what a
/// controller expects of a queue beyond them, each on a fresh queue; see the
/// [module](super). Panics naming the first rule broken and what happened.
///
/// The rules checked, in order (each panic message starts `queue conformance: ` and the
/// rule):
/// - an item added twice while waiting is handed out once;
/// - an item is not handed out again before `done`, and is queued once after it;
/// - other items are handed out while one is processed;
/// - `add_batch` (and `add_batch_with_priority`) queues each item as `add` does;
/// - `try_get` keeps `get`'s guarantees (or always answers `None`);
/// - `add_after`: the item is ready after its delay, not before;
/// - `len` counts a delayed item once its time has passed, before any `get`;
/// - `add` of an item waiting for an `add_after` time makes it ready now;
/// - an item waits for one time only: an `add_after` time that `add` or an earlier time
///   replaced does not hand the item out again;
/// - `add_after`: an earlier time replaces a later one, and a later time never postpones an
///   earlier one;
/// - `add_after` of an item being processed hands it out again once, after `done` and
///   after its delay;
/// - `add_rate_limited` counts requeues, `forget` resets them;
/// - `add_rate_limited` hands the item back after the limiter's delay (which must be under
///   a minute for a first failure), once, and after `done` when the item is being processed;
/// - `add_rate_limited` after shutdown counts the failure and drops the item;
/// - after `shut_down` adds are ignored, queued items are handed out, then `get` is `None`,
///   and `shut_down` may be called again;
/// - an item re-added while processing before `shut_down` is handed out again after its
///   `done`, even a `done` after the shutdown;
/// - delayed items are dropped at shutdown (and stay dropped once their time passes), while
///   an item whose `add_after` time passed before the shutdown is still handed out;
/// - `shut_down_with_drain(false)` waits for the items being processed, not for queued ones;
/// - `shut_down_with_drain(true)` also waits until the queued items are handed out and done;
/// - `shut_down` ends a `shut_down_with_drain` that is waiting;
/// - several workers at once (`get` and `try_get`, in one task) never hold one item
///   together, and every item added is handed out.
///
/// Not checked: priorities (a queue may ignore them) and the [`QueueMetrics`] hooks (the
/// trait has no method for them); see [`Queue`] for what a controller expects of both.
///
/// Run it in a tokio runtime with time enabled. Under paused time (`#[tokio::test(start_paused
/// = true)]`) its waits take no wall time; otherwise the check takes a few seconds.
///
/// ```
/// use informer_core::WorkQueue;
/// use informer_core::conformance::check_queue;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// check_queue(|| WorkQueue::new()).await;
/// # }
/// ```
///
/// # Panics
/// When a rule is broken (a failed check).
///
/// [`QueueMetrics`]: crate::queue::QueueMetrics
pub async fn check_queue<Q: Queue<ObjectKey>>(make: impl Fn() -> Q) {
    basics(&make).await;
    batches_and_try_get(&make).await;
    delays(&make).await;
    rate_limits(&make).await;
    shutdown(&make).await;
    drains(&make).await;
    concurrent_workers(&make).await;
}

/// Deduplication, one worker per item, re-adds while processing.
async fn basics<Q: Queue<ObjectKey>>(make: &impl Fn() -> Q) {
    let (a, b) = (key("a"), key("b"));

    let rule = "an item added twice while waiting is handed out once";
    let q = make();
    q.add(a.clone());
    q.add(a.clone());
    expect(rule, "len after two adds", 1, q.len());
    got(rule, &q, &a).await;
    q.done(&a);
    nothing(rule, &q).await;

    let rule = "an item is not handed out again before done, and is queued once after it";
    let q = make();
    q.add(a.clone());
    got(rule, &q, &a).await;
    q.add(a.clone());
    q.add(a.clone());
    nothing(rule, &q).await;
    q.done(&a);
    got(rule, &q, &a).await;
    q.done(&a);
    nothing(rule, &q).await;

    let rule = "other items are handed out while one is processed";
    let q = make();
    q.add(a.clone());
    q.add(b.clone());
    let first = take(rule, &q).await;
    let second = take(rule, &q).await;
    expect(rule, "two different items", true, first != second);
    q.done(&first);
    q.done(&second);
}

/// `add_batch`, `add_batch_with_priority` and `try_get`.
async fn batches_and_try_get<Q: Queue<ObjectKey>>(make: &impl Fn() -> Q) {
    let (a, b) = (key("a"), key("b"));

    let rule = "add_batch queues each item as add does";
    let q = make();
    q.add_batch(vec![a.clone(), b.clone(), a.clone()]);
    expect(rule, "len after add_batch of a, b, a", 2, q.len());
    let first = take(rule, &q).await;
    let second = take(rule, &q).await;
    let mut both = [first, second];
    both.sort();
    expect(rule, "the items handed out", [a.clone(), b.clone()], both);
    q.add_batch(vec![a.clone(), a.clone()]);
    nothing(rule, &q).await;
    q.done(&a);
    got(rule, &q, &a).await;
    q.done(&a);
    q.done(&b);
    nothing(rule, &q).await;
    let q = make();
    q.add_batch_with_priority(vec![a.clone(), a.clone()], PRIORITY_LOW);
    expect(
        rule,
        "len after add_batch_with_priority of a, a",
        1,
        q.len(),
    );
    got(rule, &q, &a).await;
    q.done(&a);
    nothing(rule, &q).await;

    let rule = "try_get keeps the guarantees of get (or always answers None)";
    let q = make();
    q.add(a.clone());
    match q.try_get() {
        Some(handed) => {
            expect(rule, "try_get", &a, &handed);
            expect(rule, "try_get while a is processed", None, q.try_get());
            q.add(a.clone());
            expect(
                rule,
                "try_get of a re-added while processed, before done",
                None,
                q.try_get(),
            );
            nothing(rule, &q).await;
            q.done(&a);
            got(rule, &q, &a).await;
            q.done(&a);
            expect(rule, "try_get with nothing queued", None, q.try_get());
            q.add_after(b.clone(), LONGER);
            expect(rule, "try_get of an item delayed", None, q.try_get());
            q.shut_down();
            expect(
                rule,
                "try_get after shut_down, nothing queued",
                None,
                q.try_get(),
            );
        }
        None => {
            got(rule, &q, &a).await;
            q.done(&a);
        }
    }
}

/// `add_after`: delays, which time wins, items being processed, `len`.
async fn delays<Q: Queue<ObjectKey>>(make: &impl Fn() -> Q) {
    let a = key("a");

    let rule = "add_after: the item is ready after its delay, not before";
    let q = make();
    q.add_after(a.clone(), Duration::from_millis(500));
    expect(rule, "len while delayed", 0, q.len());
    nothing(rule, &q).await;
    got(rule, &q, &a).await;
    q.done(&a);

    let rule = "len counts a delayed item once its time has passed, before any get";
    let q = make();
    q.add_after(a.clone(), SHORT);
    expect(rule, "len while delayed", 0, q.len());
    tokio::time::sleep(PAST).await;
    expect(rule, "len once the delay passed", 1, q.len());
    got_within(rule, &q, &a, QUIET).await;
    q.done(&a);

    let rule = "add of an item waiting for an add_after time makes it ready now";
    let q = make();
    q.add_after(a.clone(), Duration::from_secs(3600));
    q.add(a.clone());
    got_within(rule, &q, &a, QUIET).await;
    q.done(&a);

    let rule = "an item waits for one time only: add drops its add_after time";
    let q = make();
    q.add_after(a.clone(), LONGER);
    q.add(a.clone());
    got_within(rule, &q, &a, QUIET).await;
    q.done(&a);
    tokio::time::sleep(PAST).await;
    nothing(rule, &q).await;

    let rule = "add_after: an earlier time replaces a later one";
    let q = make();
    q.add_after(a.clone(), Duration::from_secs(3600));
    q.add_after(a.clone(), Duration::from_millis(10));
    got(rule, &q, &a).await;
    q.done(&a);

    let rule = "add_after: a later time never postpones an earlier one (and does not hand the \
                item out again)";
    let q = make();
    q.add_after(a.clone(), Duration::from_millis(100));
    q.add_after(a.clone(), LONGER);
    got_within(rule, &q, &a, SHORT).await;
    q.done(&a);
    tokio::time::sleep(PAST).await;
    nothing(rule, &q).await;

    let rule = "add_after of an item being processed hands it out again once, after done and \
                after its delay";
    let q = make();
    q.add(a.clone());
    got(rule, &q, &a).await;
    q.add_after(a.clone(), SHORT);
    tokio::time::sleep(PAST).await;
    nothing(rule, &q).await;
    q.done(&a);
    got_within(rule, &q, &a, QUIET).await;
    q.done(&a);
    nothing(rule, &q).await;
    let q = make();
    q.add(a.clone());
    got(rule, &q, &a).await;
    q.add_after(a.clone(), LONGER);
    q.done(&a);
    nothing(rule, &q).await;
    got(rule, &q, &a).await;
    q.done(&a);
    nothing(rule, &q).await;
}

/// `add_rate_limited`, `forget`, `num_requeues`.
async fn rate_limits<Q: Queue<ObjectKey>>(make: &impl Fn() -> Q) {
    let (a, b) = (key("a"), key("b"));

    let rule = "add_rate_limited counts requeues, forget resets them";
    let q = make();
    q.add_rate_limited(a.clone());
    expect(rule, "num_requeues after one", 1, q.num_requeues(&a));
    q.add_rate_limited(a.clone());
    expect(rule, "num_requeues after two", 2, q.num_requeues(&a));
    q.forget(&a);
    expect(rule, "num_requeues after forget", 0, q.num_requeues(&a));
    q.shut_down();

    let rule = "add_rate_limited hands the item back after the limiter's delay, once";
    let q = make();
    q.add_rate_limited(a.clone());
    got_within(rule, &q, &a, RETRY_PATIENCE).await;
    expect(rule, "num_requeues once handed back", 1, q.num_requeues(&a));
    q.done(&a);
    nothing(rule, &q).await;
    q.add(b.clone());
    got(rule, &q, &b).await;
    q.add_rate_limited(b.clone());
    nothing(rule, &q).await;
    q.done(&b);
    got_within(rule, &q, &b, RETRY_PATIENCE).await;
    q.done(&b);
    nothing(rule, &q).await;

    let rule = "add_rate_limited after shutdown counts the failure and drops the item";
    let q = make();
    q.shut_down();
    q.add_rate_limited(a.clone());
    expect(rule, "num_requeues", 1, q.num_requeues(&a));
    expect(rule, "len", 0, q.len());
    ended(rule, &q).await;
}

/// `shut_down`: what is still handed out, what is dropped.
async fn shutdown<Q: Queue<ObjectKey>>(make: &impl Fn() -> Q) {
    let (a, b) = (key("a"), key("b"));

    let rule = "after shut_down adds are ignored, queued items are handed out, then get is None";
    let q = make();
    q.add(a.clone());
    q.shut_down();
    expect(rule, "is_shutting_down", true, q.is_shutting_down());
    q.add(b.clone());
    q.add_batch(vec![b.clone()]);
    q.add_after(b.clone(), Duration::ZERO);
    got(rule, &q, &a).await;
    q.done(&a);
    ended(rule, &q).await;
    q.shut_down();
    ended(rule, &q).await;

    let rule = "an item re-added while processing before shut_down is handed out again after \
                its done, even a done after the shutdown";
    let q = make();
    q.add(a.clone());
    got(rule, &q, &a).await;
    q.add(a.clone());
    q.shut_down();
    q.done(&a);
    got(rule, &q, &a).await;
    q.done(&a);
    ended(rule, &q).await;

    let rule = "delayed items are dropped at shutdown, and stay dropped once their time passes";
    let q = make();
    q.add_after(a.clone(), LONGER);
    q.shut_down();
    tokio::time::sleep(PAST).await;
    expect(rule, "len once the delay passed", 0, q.len());
    ended(rule, &q).await;
    let q = make();
    q.add(b.clone());
    got(rule, &q, &b).await;
    q.add_after(b.clone(), LONGER);
    q.shut_down();
    q.done(&b);
    tokio::time::sleep(PAST).await;
    ended(rule, &q).await;

    let rule = "an item whose add_after time passed before shut_down is still handed out";
    let q = make();
    q.add_after(a.clone(), Duration::from_millis(100));
    tokio::time::sleep(SHORT).await;
    q.shut_down();
    got(rule, &q, &a).await;
    q.done(&a);
    ended(rule, &q).await;
}

/// `shut_down_with_drain`, both ways, and a forced shutdown during it.
async fn drains<Q: Queue<ObjectKey>>(make: &impl Fn() -> Q) {
    let (a, b) = (key("a"), key("b"));

    let rule = "shut_down_with_drain(false) returns at once when nothing is processed";
    let q = make();
    let quick = within(PATIENCE, q.shut_down_with_drain(false)).await;
    expect(rule, "returned", true, quick.is_some());
    expect(rule, "is_shutting_down", true, q.is_shutting_down());

    let rule = "shut_down_with_drain(false) waits for the items being processed, not for \
                queued ones";
    let q = make();
    q.add(a.clone());
    q.add(b.clone());
    got(rule, &q, &a).await;
    let mut drain = Box::pin(q.shut_down_with_drain(false));
    let early = within(QUIET, &mut drain).await;
    expect(rule, "returned before done", false, early.is_some());
    q.done(&a);
    let late = within(PATIENCE, drain).await;
    expect(
        rule,
        "returned after done, b still queued",
        true,
        late.is_some(),
    );
    got(rule, &q, &b).await;
    q.done(&b);
    ended(rule, &q).await;

    let rule = "shut_down_with_drain(true) also waits until the queued items are handed out and \
                done";
    let q = make();
    q.add(a.clone());
    q.add(b.clone());
    got(rule, &q, &a).await;
    let mut drain = Box::pin(q.shut_down_with_drain(true));
    let early = within(QUIET, &mut drain).await;
    expect(rule, "returned before done", false, early.is_some());
    q.done(&a);
    let early = within(QUIET, &mut drain).await;
    expect(rule, "returned with b still queued", false, early.is_some());
    got(rule, &q, &b).await;
    let early = within(QUIET, &mut drain).await;
    expect(rule, "returned with b processed", false, early.is_some());
    q.done(&b);
    let late = within(PATIENCE, drain).await;
    expect(rule, "returned after b was done", true, late.is_some());
    ended(rule, &q).await;

    let rule = "shut_down ends a shut_down_with_drain that is waiting";
    let q = make();
    q.add(a.clone());
    got(rule, &q, &a).await;
    let mut drain = Box::pin(q.shut_down_with_drain(true));
    let early = within(QUIET, &mut drain).await;
    expect(
        rule,
        "returned before done or shut_down",
        false,
        early.is_some(),
    );
    q.shut_down();
    let ended = within(PATIENCE, drain).await;
    expect(rule, "returned after shut_down", true, ended.is_some());
    q.done(&a);
}

/// Several workers on one queue at once (futures of one task, so any runtime will do), with
/// a producer adding the same keys over and over, and workers re-adding the key they hold.
async fn concurrent_workers<Q: Queue<ObjectKey>>(make: &impl Fn() -> Q) {
    const WORKERS: usize = 4;
    const KEYS: usize = 6;
    const ROUNDS: usize = 20;
    let rule = "an item is never held by two workers at once (several workers), and every item \
                added is handed out";
    let q = make();
    let keys: Vec<ObjectKey> = (0..KEYS).map(|i| key(&format!("c{i}"))).collect();
    let held: Mutex<HashSet<ObjectKey>> = Mutex::new(HashSet::new());
    let handed: Mutex<HashMap<ObjectKey, usize>> = Mutex::new(HashMap::new());
    let (q, held_ref, handed_ref) = (&q, &held, &handed);

    let worker = |n: usize| async move {
        let mut turn = 0usize;
        loop {
            turn += 1;
            // Half the workers try `try_get` first, as a controller's workers do.
            let ready = if n.is_multiple_of(2) {
                q.try_get()
            } else {
                None
            };
            let item = match ready {
                Some(item) => item,
                None => match within(PATIENCE, q.get()).await {
                    Some(Some(item)) => item,
                    Some(None) => break,
                    None => panic!(
                        "queue conformance: {rule}\n  get: worker {n} waited {PATIENCE:?} \
                         (the queue is shut down after a few milliseconds)"
                    ),
                },
            };
            if !held_ref.lock().unwrap().insert(item.clone()) {
                panic!(
                    "queue conformance: {rule}\n  get: worker {n} was handed {item} while \
                     another worker held it"
                );
            }
            *handed_ref.lock().unwrap().entry(item.clone()).or_default() += 1;
            // Hold the item while the other workers run; sometimes re-add it meanwhile.
            tokio::task::yield_now().await;
            if turn.is_multiple_of(3) {
                q.add(item.clone());
            }
            tokio::task::yield_now().await;
            held_ref.lock().unwrap().remove(&item);
            q.done(&item);
        }
    };
    let producer = async {
        for round in 0..ROUNDS {
            if round.is_multiple_of(2) {
                q.add_batch(keys.clone());
            } else {
                for k in &keys {
                    q.add(k.clone());
                }
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        q.shut_down();
    };
    tokio::join!(
        producer,
        futures::future::join_all((0..WORKERS).map(worker))
    );

    let handed = handed.into_inner().unwrap();
    for k in &keys {
        expect(
            rule,
            &format!("{k} handed out at least once"),
            true,
            handed.get(k).is_some_and(|n| *n > 0),
        );
    }
    ended(rule, q).await;
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Some("conformance"), name)
}

fn expect<T: PartialEq + std::fmt::Debug>(rule: &str, what: &str, want: T, got: T) {
    assert!(
        want == got,
        "queue conformance: {rule}\n  {what}: expected {want:?}, got {got:?}"
    );
}

/// `get`, bounded by `limit`: `None` when it did not return in time.
async fn get_within<Q: Queue<ObjectKey>>(q: &Q, limit: Duration) -> Option<Option<ObjectKey>> {
    within(limit, q.get()).await
}

async fn within<T>(limit: Duration, f: impl Future<Output = T>) -> Option<T> {
    tokio::time::timeout(limit, f).await.ok()
}

/// Expects `get` to hand out `item`.
async fn got<Q: Queue<ObjectKey>>(rule: &str, q: &Q, item: &ObjectKey) {
    got_within(rule, q, item, PATIENCE).await;
}

async fn got_within<Q: Queue<ObjectKey>>(rule: &str, q: &Q, item: &ObjectKey, limit: Duration) {
    match get_within(q, limit).await {
        Some(Some(handed)) => expect(rule, "get", item, &handed),
        Some(None) => {
            panic!("queue conformance: {rule}\n  get: expected {item}, got None (shut down)")
        }
        None => panic!(
            "queue conformance: {rule}\n  get: expected {item} within {limit:?}, got nothing"
        ),
    }
}

/// Expects `get` to hand out some item.
async fn take<Q: Queue<ObjectKey>>(rule: &str, q: &Q) -> ObjectKey {
    match get_within(q, PATIENCE).await {
        Some(Some(handed)) => handed,
        other => panic!("queue conformance: {rule}\n  get: expected an item, got {other:?}"),
    }
}

/// Expects `get` to hand out nothing for a while.
async fn nothing<Q: Queue<ObjectKey>>(rule: &str, q: &Q) {
    if let Some(handed) = get_within(q, QUIET).await {
        panic!("queue conformance: {rule}\n  get: expected nothing yet, got {handed:?}");
    }
}

/// Expects `get` to return `None` (shut down and empty) at once.
async fn ended<Q: Queue<ObjectKey>>(rule: &str, q: &Q) {
    match get_within(q, PATIENCE).await {
        Some(None) => {}
        Some(Some(handed)) => {
            panic!("queue conformance: {rule}\n  get: expected None, got {handed}")
        }
        None => panic!("queue conformance: {rule}\n  get: expected None, got nothing (it waits)"),
    }
}
