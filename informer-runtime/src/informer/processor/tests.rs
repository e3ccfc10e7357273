use std::sync::Arc;

use informer_core::{Deleted, Notification, ObjectKey};

use super::{FREE_LATER_FROM, frees_an_object, release};
use crate::pool;
use crate::test_support::eventually_blocking;

fn submitted() -> usize {
    pool::SUBMITTED.with(std::cell::Cell::get)
}

#[test]
fn a_notification_frees_an_object_only_when_it_holds_the_last_reference() {
    let kept = Arc::new(1u32);
    let kept_too = Arc::new(3u32);
    assert!(!frees_an_object(&Notification::Add {
        object: kept.clone(),
        is_initial_list: false,
    }));
    assert!(!frees_an_object(&Notification::Update {
        old: kept.clone(),
        new: kept_too.clone(),
    }));
    // A resync: old and new are one object, held twice by the notification itself.
    assert!(!frees_an_object(&Notification::Update {
        old: kept.clone(),
        new: kept.clone(),
    }));
    assert!(frees_an_object(&Notification::Update {
        old: Arc::new(2u32),
        new: kept.clone(),
    }));
    assert!(frees_an_object(&Notification::Delete(Deleted::Object(
        Arc::new(4u32)
    ))));
    assert!(!frees_an_object(&Notification::<u32>::Delete(
        Deleted::FinalStateUnknown {
            key: ObjectKey::cluster("gone"),
            last_known: None,
        }
    )));
    assert!(frees_an_object(&Notification::Delete(
        Deleted::FinalStateUnknown {
            key: ObjectKey::cluster("gone"),
            last_known: Some(Arc::new(5u32)),
        }
    )));
}

#[test]
fn a_run_that_frees_no_object_is_dropped_at_once_without_the_pool() {
    // Objects another handler (or the cache) still holds: releasing them only decrements.
    let objects: Vec<Arc<u32>> = (0..64).map(Arc::new).collect();
    let mut released: Vec<Notification<u32>> = objects
        .iter()
        .map(|o| Notification::Add {
            object: o.clone(),
            is_initial_list: false,
        })
        .collect();
    let before = submitted();
    release(&mut released);
    assert!(released.is_empty());
    assert_eq!(
        submitted(),
        before,
        "no decode thread is woken to free nothing"
    );
    assert!(
        objects.iter().all(|o| Arc::strong_count(o) == 1),
        "every reference was let go of before release returned"
    );
}

#[test]
fn a_run_of_last_references_is_freed_on_the_pool_and_the_rest_at_once() {
    let cached: Vec<Arc<u32>> = (0..FREE_LATER_FROM as u32).map(Arc::new).collect();
    let mut replaced = Vec::new();
    let mut released = Vec::new();
    for new in &cached {
        // An update whose old state nothing else holds any more.
        let old = Arc::new(100 + **new);
        replaced.push(Arc::downgrade(&old));
        released.push(Notification::Add {
            object: new.clone(),
            is_initial_list: false,
        });
        released.push(Notification::Update {
            old,
            new: new.clone(),
        });
    }
    let before = submitted();
    release(&mut released);
    assert!(released.is_empty());
    if pool::threads() > 0 {
        assert_eq!(submitted(), before + 1, "one pool job for the whole run");
    }
    assert!(
        cached.iter().all(|o| Arc::strong_count(o) <= 2),
        "the adds, which free nothing, were dropped at once (only the updates may still hold \
         their new state)"
    );
    eventually_blocking("the replaced objects are freed", || {
        replaced.iter().all(|w| w.upgrade().is_none())
    });
    eventually_blocking("the released objects are held by the cache alone", || {
        cached.iter().all(|o| Arc::strong_count(o) == 1)
    });
}
