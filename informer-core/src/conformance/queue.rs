//! [`check_queue`]: the rules of [`Queue`], one at a time, on fresh queues.

use std::future::Future;
use std::time::Duration;

use crate::key::ObjectKey;
use crate::queue::Queue;

/// How long the check waits for an item it expects (generous: the check is not a
/// benchmark).
const PATIENCE: Duration = Duration::from_secs(5);
/// How long the check waits to be sure an item it does not expect does not come.
const QUIET: Duration = Duration::from_millis(100);

/// Checks the queues `make` returns against the guarantees of [`Queue`] and what a
/// controller expects of a queue beyond them, each on a fresh queue; see the
/// [module](super). Panics naming the first rule broken and what happened.
///
/// Run it in a tokio runtime with time enabled. Under paused time (`#[tokio::test(start_paused
/// = true)]`) its waits take no wall time; otherwise the check takes about a second.
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
pub async fn check_queue<Q: Queue<ObjectKey>>(make: impl Fn() -> Q) {
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

    let rule = "add_after: the item is ready after its delay, not before";
    let q = make();
    q.add_after(a.clone(), Duration::from_millis(500));
    expect(rule, "len while delayed", 0, q.len());
    nothing(rule, &q).await;
    got(rule, &q, &a).await;
    q.done(&a);

    let rule = "add of an item waiting for an add_after time makes it ready now";
    let q = make();
    q.add_after(a.clone(), Duration::from_secs(3600));
    q.add(a.clone());
    got_within(rule, &q, &a, QUIET).await;
    q.done(&a);

    let rule = "add_after: an earlier time replaces a later one";
    let q = make();
    q.add_after(a.clone(), Duration::from_secs(3600));
    q.add_after(a.clone(), Duration::from_millis(10));
    got(rule, &q, &a).await;
    q.done(&a);

    let rule = "add_rate_limited counts requeues, forget resets them";
    let q = make();
    q.add_rate_limited(a.clone());
    expect(rule, "num_requeues after one", 1, q.num_requeues(&a));
    q.add_rate_limited(a.clone());
    expect(rule, "num_requeues after two", 2, q.num_requeues(&a));
    q.forget(&a);
    expect(rule, "num_requeues after forget", 0, q.num_requeues(&a));
    q.shut_down();

    let rule = "after shut_down adds are ignored, queued items are handed out, then get is None";
    let q = make();
    q.add(a.clone());
    q.shut_down();
    expect(rule, "is_shutting_down", true, q.is_shutting_down());
    q.add(b.clone());
    got(rule, &q, &a).await;
    q.done(&a);
    ended(rule, &q).await;
    q.shut_down();
    ended(rule, &q).await;

    let rule = "delayed items are dropped at shutdown";
    let q = make();
    q.add_after(a.clone(), Duration::from_secs(3600));
    q.shut_down();
    ended(rule, &q).await;

    let rule = "shut_down_with_drain waits for the items being processed";
    let q = make();
    q.add(a.clone());
    got(rule, &q, &a).await;
    let mut drain = Box::pin(q.shut_down_with_drain(false));
    let early = tokio::time::timeout(QUIET, &mut drain).await;
    expect(rule, "returned before done", true, early.is_err());
    q.done(&a);
    let late = tokio::time::timeout(PATIENCE, drain).await;
    expect(rule, "returned after done", true, late.is_ok());

    let rule = "shut_down ends a shut_down_with_drain that is waiting";
    let q = make();
    q.add(a.clone());
    got(rule, &q, &a).await;
    let mut drain = Box::pin(q.shut_down_with_drain(true));
    let early = tokio::time::timeout(QUIET, &mut drain).await;
    expect(
        rule,
        "returned before done or shut_down",
        true,
        early.is_err(),
    );
    q.shut_down();
    let ended = tokio::time::timeout(PATIENCE, drain).await;
    expect(rule, "returned after shut_down", true, ended.is_ok());
    q.done(&a);
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
