//! client-go's unit tests of its plain `FIFO` (`tools/cache/fifo_test.go`) and of its `Heap`
//! (`tools/cache/heap_test.go`), ported onto [`ObjectFifo`] and [`Heap`] (client-go v0.36),
//! to find behaviour that differs from client-go.
//!
//! Each test is named after the Go test it ports (`<go file>_<go test>` in snake case, the
//! type's prefix dropped as in `client_go_cache.rs`) and says which one in its first
//! comment. Where this library deliberately differs and documents it, the test asserts the
//! documented behaviour and says so. Go's `Pop(queue)` helper is `pop_with(|obj, _| obj)`;
//! goroutines become threads or tokio tasks; a Go test that reads the heap's internals
//! (`h.data`) reads the same through the public API (`len`, `get_by_key`, `peek`).
//!
//! `TestFIFO_requeueOnPop` and `TestFIFO_addIfNotPresent` are from client-go's
//! `fifo_test.go` before v0.36, which dropped `ErrRequeue` and `FIFO.AddIfNotPresent`; this
//! library's `ObjectFifo` keeps `add_if_not_present`, the way to requeue (see
//! `ObjectFifo::pop_with`), so they are ported too.
//!
//! Not ported: none. (`List`, `ListKeys`, `Get` and `GetByKey` of the FIFO live in client-go's
//! test file as test helpers; here they are `ObjectFifo`'s own methods.)

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use informer_core::{Fifo, FifoError, Heap, KeyError, ObjectFifo, ObjectKey};
use tokio::sync::mpsc;

// ---------- the test objects ----------

/// client-go's `testFifoObject` and `testHeapObject`: a name (its key) and a value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Obj {
    name: String,
    val: i64,
}

/// client-go's `mkFifoObj` and `mkHeapObj`.
fn obj(name: &str, val: i64) -> Arc<Obj> {
    Arc::new(Obj {
        name: name.to_owned(),
        val,
    })
}

/// client-go's `testFifoObjectKeyFunc` and `testHeapObjectKeyFunc`: the name.
fn obj_key(o: &Obj) -> Result<ObjectKey, KeyError> {
    Ok(ObjectKey::cluster(&o.name))
}

/// client-go's `compareInts`.
fn compare_ints(a: &Obj, b: &Obj) -> bool {
    a.val < b.val
}

fn new_fifo() -> ObjectFifo<Obj> {
    ObjectFifo::with_key_fn(obj_key)
}

fn new_heap() -> Heap<Obj> {
    Heap::with_key_fn(obj_key, compare_ints)
}

/// client-go's `Pop(queue)` helper on an object that is queued already.
fn pop_ready(f: &ObjectFifo<Obj>) -> Arc<Obj> {
    f.pop_with(|o, _| o)
        .now_or_never()
        .expect("an object is queued")
        .expect("the FIFO is open")
}

/// `h.Pop()` on a heap that holds an object already.
fn heap_pop(h: &Heap<Obj>) -> i64 {
    h.pop()
        .now_or_never()
        .expect("an object is held")
        .expect("the heap is open")
        .val
}

/// A task popping `f` until it is closed, sending what it pops (Go's popping goroutine).
fn spawn_popper(f: &Arc<ObjectFifo<Obj>>) -> mpsc::UnboundedReceiver<Arc<Obj>> {
    let (tx, rx) = mpsc::unbounded_channel();
    let f = f.clone();
    tokio::spawn(async move {
        while let Ok(o) = f.pop_with(|o, _| o).await {
            if tx.send(o).is_err() {
                return;
            }
        }
    });
    rx
}

// ---------- fifo_test.go ----------

// Go: TestFIFO_basic
#[tokio::test]
async fn fifo_test_basic() {
    let f = Arc::new(new_fifo());
    const AMOUNT: i64 = 500;
    let producers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|prefix| {
            let f = f.clone();
            std::thread::spawn(move || {
                for i in 0..AMOUNT {
                    f.add(obj(&format!("{prefix}{i}"), i + 1)).unwrap();
                }
            })
        })
        .collect();

    // Each producer's values come out in the order it added them.
    let mut last = HashMap::from([("a", 0), ("b", 0)]);
    for _ in 0..AMOUNT * 2 {
        let o = tokio::time::timeout(Duration::from_secs(10), f.pop_with(|o, _| o))
            .await
            .expect("an object is popped")
            .unwrap();
        let prefix = if o.name.starts_with('a') { "a" } else { "b" };
        let prev = last.insert(prefix, o.val).unwrap();
        assert!(o.val > prev, "got {o:?} out of order, last was {prev}");
    }
    for p in producers {
        p.join().unwrap();
    }
}

// Go: TestFIFO_requeueOnPop (client-go before v0.36: `process` returned `ErrRequeue`; here
// it requeues with `add_if_not_present`, and its result is what `pop_with` returns)
#[test]
fn fifo_test_requeue_on_pop() {
    let f = new_fifo();
    f.add(obj("foo", 10)).unwrap();
    let out = f
        .pop_with(|o, _| {
            assert_eq!(o.name, "foo", "unexpected object");
            f.add_if_not_present(o).unwrap();
            Ok::<(), String>(())
        })
        .now_or_never()
        .unwrap();
    assert_eq!(out, Ok(Ok(())));
    assert!(
        f.get_by_key(&ObjectKey::cluster("foo")).is_some(),
        "object should have been requeued"
    );

    let out = f
        .pop_with(|o, _| {
            assert_eq!(o.name, "foo", "unexpected object");
            f.add_if_not_present(o).unwrap();
            Err::<(), String>("test error".into())
        })
        .now_or_never()
        .unwrap();
    assert_eq!(out, Ok(Err("test error".to_string())));
    assert!(
        f.get_by_key(&ObjectKey::cluster("foo")).is_some(),
        "object should have been requeued"
    );

    let out = f
        .pop_with(|o, _| {
            assert_eq!(o.name, "foo", "unexpected object");
            Ok::<(), String>(())
        })
        .now_or_never()
        .unwrap();
    assert_eq!(out, Ok(Ok(())));
    assert!(
        f.get_by_key(&ObjectKey::cluster("foo")).is_none(),
        "object should have been removed"
    );
}

// Go: TestFIFO_addUpdate
#[tokio::test]
async fn fifo_test_add_update() {
    let f = Arc::new(new_fifo());
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("foo", 15)).unwrap();

    assert_eq!(f.list(), [obj("foo", 15)]);
    assert_eq!(f.list_keys(), [ObjectKey::cluster("foo")]);

    let mut got = spawn_popper(&f);
    let first = tokio::time::timeout(Duration::from_secs(5), got.recv())
        .await
        .expect("a value is popped")
        .unwrap();
    assert_eq!(first.val, 15, "didn't get updated value");
    let second = tokio::time::timeout(Duration::from_millis(50), got.recv()).await;
    assert!(second.is_err(), "got second value {second:?}");
    assert_eq!(
        f.get(&obj("foo", 0)).unwrap(),
        None,
        "item did not get removed"
    );
    f.close();
}

// Go: TestFIFO_addReplace
#[tokio::test]
async fn fifo_test_add_replace() {
    let f = Arc::new(new_fifo());
    f.add(obj("foo", 10)).unwrap();
    f.replace(vec![obj("foo", 15)], "15".into()).unwrap();

    let mut got = spawn_popper(&f);
    let first = tokio::time::timeout(Duration::from_secs(5), got.recv())
        .await
        .expect("a value is popped")
        .unwrap();
    assert_eq!(first.val, 15, "didn't get updated value");
    let second = tokio::time::timeout(Duration::from_millis(50), got.recv()).await;
    assert!(second.is_err(), "got second value {second:?}");
    assert_eq!(
        f.get(&obj("foo", 0)).unwrap(),
        None,
        "item did not get removed"
    );
    f.close();
}

// Go: TestFIFO_detectLineJumpers
#[test]
fn fifo_test_detect_line_jumpers() {
    let f = new_fifo();
    f.add(obj("foo", 10)).unwrap();
    f.add(obj("bar", 1)).unwrap();
    f.add(obj("foo", 11)).unwrap();
    f.add(obj("foo", 13)).unwrap();
    f.add(obj("zab", 30)).unwrap();

    assert_eq!(pop_ready(&f).val, 13);
    f.add(obj("foo", 14)).unwrap(); // ensure foo doesn't jump back in line
    assert_eq!(pop_ready(&f).val, 1);
    assert_eq!(pop_ready(&f).val, 30);
    assert_eq!(pop_ready(&f).val, 14);
}

// Go: TestFIFO_addIfNotPresent (client-go before v0.36)
#[test]
fn fifo_test_add_if_not_present() {
    let f = new_fifo();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.add_if_not_present(obj("b", 3)).unwrap();
    f.add_if_not_present(obj("c", 4)).unwrap();

    assert_eq!(f.len(), 3, "queue length");
    for expected in [1, 2, 4] {
        assert_eq!(pop_ready(&f).val, expected);
    }
}

// Go: TestFIFO_HasSynced
#[test]
fn fifo_test_has_synced() {
    type Action = fn(&ObjectFifo<Obj>);
    let pop: Action = |f| {
        pop_ready(f);
    };
    let replace_two: Action = |f| {
        f.replace(vec![obj("a", 1), obj("b", 2)], "0".into())
            .unwrap()
    };
    let cases: Vec<(Vec<Action>, bool)> = vec![
        (vec![], false),
        (vec![|f| f.add(obj("a", 1)).unwrap()], true),
        (vec![|f| f.replace(vec![], "0".into()).unwrap()], true),
        (vec![replace_two], false),
        (vec![replace_two, pop], false),
        (vec![replace_two, pop, pop], true),
    ];
    for (i, (actions, expected)) in cases.into_iter().enumerate() {
        let f = new_fifo();
        for action in actions {
            action(&f);
        }
        assert_eq!(f.has_synced(), expected, "test case {i}");
    }
}

// Go: TestFIFO_PopShouldUnblockWhenClosed
#[tokio::test]
async fn fifo_test_pop_should_unblock_when_closed() {
    let f = Arc::new(new_fifo());
    const JOBS: usize = 10;
    let (tx, mut rx) = mpsc::unbounded_channel();
    for _ in 0..JOBS {
        let f = f.clone();
        let tx = tx.clone();
        tokio::spawn(async move {
            let out = f.pop_with(|_, _| ()).await;
            tx.send(out).unwrap();
        });
    }
    tokio::task::yield_now().await;
    f.close();
    for _ in 0..JOBS {
        let out = tokio::time::timeout(Duration::from_millis(500), rx.recv())
            .await
            .expect("timed out waiting for Pop to return after Close")
            .unwrap();
        assert_eq!(out, Err(FifoError::Closed));
    }
}

// ---------- heap_test.go ----------

// Go: TestHeapBasic
#[test]
fn heap_test_basic() {
    let h = Arc::new(new_heap());
    const AMOUNT: i64 = 500;
    // Insert items in the heap in opposite orders in two threads.
    let down = {
        let h = h.clone();
        std::thread::spawn(move || {
            for i in (1..=AMOUNT).rev() {
                h.add(obj(&format!("a{i}"), i)).unwrap();
            }
        })
    };
    let up = {
        let h = h.clone();
        std::thread::spawn(move || {
            for u in 0..AMOUNT {
                h.add(obj(&format!("b{u}"), u + 1)).unwrap();
            }
        })
    };
    down.join().unwrap();
    up.join().unwrap();
    // The numbers pop in ascending order.
    let mut prev = 0;
    for _ in 0..AMOUNT * 2 {
        let num = heap_pop(&h);
        assert!(prev <= num, "got {num} out of order, last was {prev}");
        prev = num;
    }
}

// Go: TestHeap_Add
#[test]
fn heap_test_add() {
    let h = new_heap();
    h.add(obj("foo", 10)).unwrap();
    h.add(obj("bar", 1)).unwrap();
    h.add(obj("baz", 11)).unwrap();
    h.add(obj("zab", 30)).unwrap();
    h.add(obj("foo", 13)).unwrap(); // This updates "foo".

    assert_eq!(heap_pop(&h), 1);
    assert_eq!(heap_pop(&h), 11);
    // Nothing is deleted (client-go returns an error; here `None`, documented on `delete`).
    assert_eq!(h.delete(&obj("baz", 11)).unwrap(), None);
    h.add(obj("foo", 14)).unwrap(); // foo is updated.
    assert_eq!(heap_pop(&h), 14);
    assert_eq!(heap_pop(&h), 30);
}

// Go: TestHeap_BulkAdd
#[tokio::test]
async fn heap_test_bulk_add() {
    let h = Arc::new(new_heap());
    const AMOUNT: i64 = 500;
    // Insert items in the heap in opposite orders in a thread.
    let producer = {
        let h = h.clone();
        std::thread::spawn(move || {
            let list = (1..=AMOUNT)
                .rev()
                .map(|i| obj(&format!("a{i}"), i))
                .collect();
            h.bulk_add(list).unwrap();
        })
    };
    // Every item is added before a pop reads them, so they pop strictly ascending.
    let mut prev = -1;
    for _ in 0..AMOUNT {
        let num = tokio::time::timeout(Duration::from_secs(10), h.pop())
            .await
            .expect("an object is popped")
            .unwrap()
            .val;
        assert!(prev < num, "got {num} out of order, last was {prev}");
        prev = num;
    }
    producer.join().unwrap();
}

// Go: TestHeapEmptyPop
#[tokio::test(start_paused = true)]
async fn heap_test_empty_pop() {
    let h = Arc::new(new_heap());
    let closer = h.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        closer.close();
    });
    assert_eq!(
        h.pop().await,
        Err(FifoError::Closed),
        "pop should have returned heap closed error"
    );
}

// Go: TestHeap_AddIfNotPresent
#[test]
fn heap_test_add_if_not_present() {
    let h = new_heap();
    h.add_if_not_present(obj("foo", 10)).unwrap();
    h.add_if_not_present(obj("bar", 1)).unwrap();
    h.add_if_not_present(obj("baz", 11)).unwrap();
    h.add_if_not_present(obj("zab", 30)).unwrap();
    h.add_if_not_present(obj("foo", 13)).unwrap(); // This is not added.

    assert_eq!(h.len(), 4, "unexpected number of items");
    assert_eq!(h.get_by_key(&ObjectKey::cluster("foo")).unwrap().val, 10);
    assert_eq!(heap_pop(&h), 1);
    assert_eq!(heap_pop(&h), 10);
    // bar is already popped. Let's add another one.
    h.add_if_not_present(obj("bar", 14)).unwrap();
    assert_eq!(heap_pop(&h), 11);
    assert_eq!(heap_pop(&h), 14);
}

// Go: TestHeap_Delete
#[test]
fn heap_test_delete() {
    let h = new_heap();
    h.add(obj("foo", 10)).unwrap();
    h.add(obj("bar", 1)).unwrap();
    h.add(obj("bal", 31)).unwrap();
    h.add(obj("baz", 11)).unwrap();

    // Delete head. Delete works with the key and doesn't care about the value.
    assert!(
        h.delete(&obj("bar", 200)).unwrap().is_some(),
        "failed to delete head"
    );
    assert_eq!(heap_pop(&h), 10);
    h.add(obj("zab", 30)).unwrap();
    h.add(obj("faz", 30)).unwrap();
    let len = h.len();
    // Delete a non-existing item: client-go returns an error; here `None` (documented on
    // `delete`), and nothing is removed.
    assert_eq!(h.delete(&obj("non-existent", 10)).unwrap(), None);
    assert_eq!(h.len(), len, "didn't expect any item removal");
    // Delete tail.
    assert!(
        h.delete(&obj("bal", 31)).unwrap().is_some(),
        "failed to delete tail"
    );
    // Delete one of the items with value 30.
    assert!(
        h.delete(&obj("zab", 30)).unwrap().is_some(),
        "failed to delete item"
    );
    assert_eq!(heap_pop(&h), 11);
    assert_eq!(heap_pop(&h), 30);
    assert!(h.is_empty(), "expected an empty heap");
}

// Go: TestHeap_Update (client-go reads the head from `h.data.queue[0]`; here `peek`)
#[test]
fn heap_test_update() {
    let h = new_heap();
    h.add(obj("foo", 10)).unwrap();
    h.add(obj("bar", 1)).unwrap();
    h.add(obj("bal", 31)).unwrap();
    h.add(obj("baz", 11)).unwrap();

    // Update an item to a value that should push it to the head.
    h.update(obj("baz", 0)).unwrap();
    assert_eq!(
        h.peek().unwrap().name,
        "baz",
        "expected baz to be at the head"
    );
    assert_eq!(heap_pop(&h), 0);
    // Update bar to push it farther back in the queue.
    h.update(obj("bar", 100)).unwrap();
    assert_eq!(
        h.peek().unwrap().name,
        "foo",
        "expected foo to be at the head"
    );
}

// Go: TestHeap_Get
#[test]
fn heap_test_get() {
    let h = new_heap();
    h.add(obj("foo", 10)).unwrap();
    h.add(obj("bar", 1)).unwrap();
    h.add(obj("bal", 31)).unwrap();
    h.add(obj("baz", 11)).unwrap();

    // Get works with the key.
    let got = h.get(&obj("baz", 0)).unwrap();
    assert_eq!(got.map(|o| o.val), Some(11));
    // Get a non-existing object.
    assert_eq!(h.get(&obj("non-existing", 0)).unwrap(), None);
}

// Go: TestHeap_GetByKey
#[test]
fn heap_test_get_by_key() {
    let h = new_heap();
    h.add(obj("foo", 10)).unwrap();
    h.add(obj("bar", 1)).unwrap();
    h.add(obj("bal", 31)).unwrap();
    h.add(obj("baz", 11)).unwrap();

    let got = h.get_by_key(&ObjectKey::cluster("baz"));
    assert_eq!(got.map(|o| o.val), Some(11));
    assert_eq!(h.get_by_key(&ObjectKey::cluster("non-existing")), None);
}

// Go: TestHeap_Close
#[test]
fn heap_test_close() {
    let h = new_heap();
    h.add(obj("foo", 10)).unwrap();
    h.add(obj("bar", 1)).unwrap();

    assert!(!h.is_closed(), "didn't expect heap to be closed");
    h.close();
    assert!(h.is_closed(), "expect heap to be closed");
}

/// The items of `TestHeap_List` and `TestHeap_ListKeys`.
fn list_items() -> HashMap<&'static str, i64> {
    HashMap::from([
        ("foo", 10),
        ("bar", 1),
        ("bal", 30),
        ("baz", 11),
        ("faz", 30),
    ])
}

// Go: TestHeap_List
#[test]
fn heap_test_list() {
    let h = new_heap();
    assert!(h.list().is_empty(), "expected an empty list");

    let items = list_items();
    for (k, v) in &items {
        h.add(obj(k, *v)).unwrap();
    }
    let list = h.list();
    assert_eq!(list.len(), items.len());
    for o in list {
        assert_eq!(
            items.get(o.name.as_str()),
            Some(&o.val),
            "unexpected item {o:?}"
        );
    }
}

// Go: TestHeap_ListKeys
#[test]
fn heap_test_list_keys() {
    let h = new_heap();
    assert!(h.list_keys().is_empty(), "expected an empty list");

    let items = list_items();
    for (k, v) in &items {
        h.add(obj(k, *v)).unwrap();
    }
    let keys = h.list_keys();
    assert_eq!(keys.len(), items.len());
    for key in keys {
        assert!(items.contains_key(key.name()), "unexpected item {key}");
    }
}

// Go: TestHeapAddAfterClose
#[test]
fn heap_test_add_after_close() {
    let h = new_heap();
    h.close();
    assert_eq!(h.add(obj("test", 1)), Err(FifoError::Closed));
    assert_eq!(h.add_if_not_present(obj("test", 1)), Err(FifoError::Closed));
    assert_eq!(h.bulk_add(vec![obj("test", 1)]), Err(FifoError::Closed));
}
