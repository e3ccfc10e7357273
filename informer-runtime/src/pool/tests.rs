use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::ThreadId;

use super::*;
use crate::test_support::eventually_blocking;

#[test]
fn map_parallel_keeps_the_items_order() {
    for n in [0, 1, 15, 16, 17, 10_000] {
        let items: Vec<usize> = (0..n).collect();
        let out = map_parallel(items, |i| {
            // Enough work per item that the decode threads join in.
            std::hint::black_box((0..200).fold(*i, |a, b| a.wrapping_mul(31).wrapping_add(b)));
            i * 2
        });
        assert_eq!(out, (0..n).map(|i| i * 2).collect::<Vec<_>>(), "{n} items");
    }
}

#[test]
fn map_parallel_passes_a_panic_on_to_the_caller() {
    let items: Vec<usize> = (0..1_000).collect();
    let result = std::panic::catch_unwind(|| {
        map_parallel(items, |i| {
            assert!(*i != 500, "boom");
            *i
        })
    });
    assert!(result.is_err());
}

/// Records, when dropped, the thread it was dropped on.
struct DropProbe {
    dropped: Arc<Mutex<Vec<ThreadId>>>,
}

impl Drop for DropProbe {
    fn drop(&mut self) {
        self.dropped.lock().push(std::thread::current().id());
    }
}

#[test]
fn free_later_drops_everything_it_is_given_off_the_callers_thread() {
    if threads() == 0 {
        return; // INFORMER_DECODE_THREADS=0: covered by the next test.
    }
    let dropped = Arc::new(Mutex::new(Vec::new()));
    let garbage: Vec<DropProbe> = (0..100)
        .map(|_| DropProbe {
            dropped: dropped.clone(),
        })
        .collect();
    free_later(garbage);
    eventually_blocking("every item is dropped", || dropped.lock().len() == 100);
    let me = std::thread::current().id();
    assert!(dropped.lock().iter().all(|t| *t != me));
}

#[test]
fn free_later_without_decode_threads_drops_at_once() {
    let dropped = Arc::new(Mutex::new(Vec::new()));
    let garbage = vec![DropProbe {
        dropped: dropped.clone(),
    }];
    free_later_on(0, garbage);
    assert_eq!(*dropped.lock(), vec![std::thread::current().id()]);
}

#[test]
fn free_later_survives_a_panicking_drop_and_keeps_freeing() {
    if threads() == 0 {
        return;
    }
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("a Drop that panics");
        }
    }
    free_later(vec![Bomb]);
    let freed = Arc::new(AtomicUsize::new(0));
    struct Count(Arc<AtomicUsize>);
    impl Drop for Count {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    for _ in 0..2 * threads() {
        free_later(vec![Count(freed.clone())]);
    }
    eventually_blocking("the later batches are freed", || {
        freed.load(Ordering::Relaxed) == 2 * threads()
    });
}
