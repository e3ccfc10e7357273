//! More of client-go's own `tools/cache` unit tests (v0.36), ported onto this library's API to
//! find behaviour that differs from client-go: the ones the other `client_go_*.rs` files of
//! this crate leave out.
//!
//! Each test is named after the Go test it ports (`<go file>_<go test>` in snake case) and
//! says which one in its first comment. Where this library deliberately differs and
//! documents it, the test asserts the documented behaviour and says so.
//!
//! Sources: `store_test.go` (`TestFIFOCache`: client-go runs its `doTestStore` on its plain
//! `FIFO`, which is [`ObjectFifo`] here).
//!
//! Not ported (no counterpart in this crate): `mutation_cache_test.go` (no mutation cache),
//! `synctrack/synctrack_test.go` and `synctrack/lazy_test.go` (client-go's internal
//! `SingleFileTracker`, `AsyncTracker` and `Lazy`; a handler registration's `has_synced`,
//! which they implement in client-go, is tested by the shared informer ports of
//! `informer-runtime`).

mod client_go {
    pub mod store_test;
}

use std::sync::Arc;

use client_go::store_test::{StoreObj, store_obj, store_obj_key};
use informer_core::{Fifo, ObjectFifo};

/// The values of `objs`, sorted (as `doTestStore` compares them, as a set).
fn vals(objs: &[Arc<StoreObj>]) -> Vec<String> {
    let mut v: Vec<String> = objs.iter().map(|o| o.val.clone()).collect();
    v.sort();
    v
}

// Go: TestFIFOCache — client-go's `doTestStore` on `NewFIFO(testStoreKeyFunc)`: add, get,
// update, delete, list and replace. `ObjectFifo` is a `Fifo`, not a `Store`, so the body of
// `doTestStore` is written out against its methods (`Fifo::add/update/delete/replace`, and
// `ObjectFifo::get/list`, client-go's `FIFO.Get`/`List`), with the same inputs and
// expectations.
#[test]
fn store_test_fifo_cache() {
    let store: ObjectFifo<StoreObj> = ObjectFifo::with_key_fn(store_obj_key);

    store.add(store_obj("foo", "bar")).unwrap();
    let item = store.get(&store_obj("foo", "")).unwrap();
    assert_eq!(item.expect("didn't find inserted item").val, "bar");

    store.update(store_obj("foo", "baz")).unwrap();
    let item = store.get(&store_obj("foo", "")).unwrap();
    assert_eq!(item.expect("didn't find inserted item").val, "baz");

    store.delete(store_obj("foo", "")).unwrap();
    assert!(
        store.get(&store_obj("foo", "")).unwrap().is_none(),
        "found deleted item??"
    );

    // Test List.
    store.add(store_obj("a", "b")).unwrap();
    store.add(store_obj("c", "d")).unwrap();
    store.add(store_obj("e", "e")).unwrap();
    assert_eq!(
        vals(&store.list()),
        ["b", "d", "e"],
        "missing or extra items"
    );

    // Test Replace.
    store
        .replace(
            vec![store_obj("foo", "foo"), store_obj("bar", "bar")],
            "0".to_owned(),
        )
        .unwrap();
    assert_eq!(
        vals(&store.list()),
        ["bar", "foo"],
        "missing or extra items"
    );
}
