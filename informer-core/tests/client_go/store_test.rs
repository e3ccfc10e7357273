//! What client-go's `store_test.go` shares between its store tests: `testStoreObject`, its
//! key function, and `doTestStore`, run on every store that implements `Store`.

#![allow(dead_code)] // each test file uses part of it
#![allow(clippy::disallowed_names)] // the Go tests' names

use std::sync::Arc;

use informer_core::{KeyError, ObjectKey, Store};

/// client-go's `testStoreObject`, keyed by `id` (`testStoreKeyFunc`).
#[derive(Debug, PartialEq, Eq)]
pub struct StoreObj {
    pub id: String,
    pub val: String,
}

pub fn store_obj(id: &str, val: &str) -> Arc<StoreObj> {
    Arc::new(StoreObj {
        id: id.to_owned(),
        val: val.to_owned(),
    })
}

pub fn store_obj_key(o: &StoreObj) -> Result<ObjectKey, KeyError> {
    Ok(ObjectKey::cluster(&o.id))
}

/// The values of `objs`, sorted.
fn vals(objs: &[Arc<StoreObj>]) -> Vec<String> {
    let mut v: Vec<String> = objs.iter().map(|o| o.val.clone()).collect();
    v.sort();
    v
}

/// client-go's `doTestStore`: add, update, delete, list and replace on an empty store.
pub fn do_test_store(store: &dyn Store<StoreObj>) {
    let foo = ObjectKey::cluster("foo");

    store.add(store_obj("foo", "bar")).unwrap();
    assert_eq!(store.get(&foo).expect("inserted item").val, "bar");
    store.update(store_obj("foo", "baz")).unwrap();
    assert_eq!(store.get(&foo).expect("updated item").val, "baz");
    store.delete(&foo);
    assert!(store.get(&foo).is_none(), "found deleted item");

    // List.
    store.add(store_obj("a", "b")).unwrap();
    store.add(store_obj("c", "d")).unwrap();
    store.add(store_obj("e", "e")).unwrap();
    assert_eq!(vals(&store.list()), ["b", "d", "e"]);

    // Replace.
    store
        .replace(vec![store_obj("foo", "foo"), store_obj("bar", "bar")], "0")
        .unwrap();
    assert_eq!(vals(&store.list()), ["bar", "foo"]);
}
