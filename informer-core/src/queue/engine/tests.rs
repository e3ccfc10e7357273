use std::sync::Arc;

use super::{Engine, LOCK_SPIN};
use crate::queue::PRIORITY_NORMAL;
use crate::queue::builder::QueueBuilder;

fn engine() -> Arc<Engine<u32>> {
    Arc::new(Engine::new(QueueBuilder::<u32, ()>::new(), false))
}

#[test]
fn a_worker_held_up_past_its_backoff_takes_the_lock_once_it_is_released() {
    let engine = engine();
    engine.add(7, PRIORITY_NORMAL, None);
    let guard = engine.lock();
    let worker = {
        let engine = engine.clone();
        std::thread::spawn(move || engine.try_get().map(|(item, _)| item))
    };
    // Long past the backoff: the worker has parked on the mutex, not given up.
    std::thread::sleep(LOCK_SPIN * 100);
    assert!(
        !worker.is_finished(),
        "try_get returned while the lock was held"
    );
    drop(guard);
    assert_eq!(worker.join().expect("worker"), Some(7));
}

#[test]
fn an_add_and_a_done_contending_for_the_lock_both_complete() {
    let engine = engine();
    engine.add(1, PRIORITY_NORMAL, None);
    let (item, _) = engine.try_get().expect("ready");
    let guard = engine.lock();
    let adder = {
        let engine = engine.clone();
        std::thread::spawn(move || engine.add(2, PRIORITY_NORMAL, None))
    };
    let finisher = {
        let engine = engine.clone();
        std::thread::spawn(move || engine.done(&item))
    };
    std::thread::sleep(LOCK_SPIN * 10);
    drop(guard);
    adder.join().expect("adder");
    finisher.join().expect("finisher");
    assert_eq!(engine.len(), 1);
    assert_eq!(engine.try_get().map(|(item, _)| item), Some(2));
    assert_eq!(engine.try_get(), None, "item 1 was forgotten by its done");
}
