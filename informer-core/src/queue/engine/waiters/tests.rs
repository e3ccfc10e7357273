use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Wake, Waker};

use super::*;
use crate::queue::WorkQueue;

/// A waker that counts its wake-ups.
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn parked(st: &mut State<u32>, id: u64) -> Arc<Count> {
    let count = Arc::new(Count(AtomicUsize::new(0)));
    st.waiters.push_back(Parked {
        id,
        waker: Waker::from(count.clone()),
    });
    count
}

fn add(st: &mut State<u32>, item: u32) -> After<u32> {
    let mut out = After::default();
    assert!(st.add(u64::from(item), item, 0, None, &mut out).is_none());
    out
}

#[test]
fn an_item_wakes_no_parked_worker_while_the_spinners_can_take_every_ready_item() {
    let mut st = State::new(false, Arc::new(Signals::default()));
    parked(&mut st, 0);
    parked(&mut st, 1);
    st.spinners = 1;
    assert!(add(&mut st, 1).wake_first.is_none(), "the spinner takes it");
    assert!(
        add(&mut st, 2).wake_first.is_some(),
        "two ready, one spinner"
    );
    st.spinners = 0;
    assert!(add(&mut st, 3).wake_first.is_some(), "no spinner");
}

#[test]
fn an_item_that_wakes_a_parked_worker_turns_spinning_back_on() {
    let mut st = State::new(false, Arc::new(Signals::default()));
    st.spin = false;
    add(&mut st, 1);
    assert!(!st.spin, "nobody parked: nobody to wake");
    parked(&mut st, 0);
    assert!(add(&mut st, 2).wake_first.is_some());
    assert!(st.spin, "items come while workers wait");
}

#[test]
fn the_ready_hint_says_whether_any_item_is_ready() {
    let queue = WorkQueue::new();
    let hint = || queue.engine.signals.has_ready();
    assert!(!hint());
    queue.add(1);
    queue.add(2);
    assert!(hint());
    let one = queue.try_get().unwrap();
    assert!(hint());
    let two = queue.try_get().unwrap();
    assert!(!hint());
    queue.add(one);
    queue.done(&one);
    assert!(hint(), "re-added while processing: ready at done");
    queue.done(&two);
}

#[test]
fn a_worker_spins_only_on_a_multi_threaded_runtime() {
    assert!(!may_spin(), "outside a tokio runtime");
    let current = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert!(!current.block_on(async { may_spin() }));
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    assert!(multi.block_on(async { may_spin() }));
}

#[test]
fn a_spin_that_finds_nothing_parks_and_turns_spinning_off_and_an_add_still_wakes_it() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let queue = Arc::new(WorkQueue::<u32>::new());
        let worker = {
            let queue = queue.clone();
            tokio::spawn(async move { queue.get().await })
        };
        // Wait (generously) until the worker has spun and parked.
        let parked = |queue: &WorkQueue<u32>| {
            let st = queue.engine.state.lock();
            st.waiters.len() == 1 && st.spinners == 0
        };
        for _ in 0..10_000 {
            if parked(&queue) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        assert!(parked(&queue), "the worker parked");
        assert!(!queue.engine.state.lock().spin, "its spin found nothing");
        queue.add(7);
        assert_eq!(worker.await.unwrap(), Some(7));
        assert!(
            queue.engine.state.lock().spin,
            "the add woke a parked worker"
        );
    });
}

#[test]
fn a_spinning_worker_lets_the_other_tasks_of_its_thread_run() {
    // One worker thread: while the `get` spins, the task that adds its item can only run if
    // the spin yields the thread. It does, so the item is taken by the spinner (nobody
    // parked, nobody woken), not after a spin that blocked the thread and then parked. A spin
    // lasts 20 µs of wall time, which a preempted thread may lose: tried a few times.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .unwrap();
    let seen: Vec<(usize, usize)> = (0..20)
        .map(|_| {
            rt.block_on(async {
                let queue = Arc::new(WorkQueue::<u32>::new());
                // Spawned from outside the worker thread: it runs them in this order.
                let worker = tokio::spawn({
                    let queue = queue.clone();
                    async move { queue.get().await }
                });
                let producer = tokio::spawn(async move {
                    let st = queue.engine.state.lock();
                    let spinning = (st.spinners, st.waiters.len());
                    drop(st);
                    queue.add(7);
                    spinning
                });
                let spinning = producer.await.unwrap();
                assert_eq!(worker.await.unwrap(), Some(7));
                spinning
            })
        })
        .collect();
    assert!(
        seen.contains(&(1, 0)),
        "the producer never ran while the worker spun (spinners, parked): {seen:?}"
    );
}

#[test]
fn a_get_dropped_while_spinning_passes_its_item_on_to_a_parked_worker() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let queue = Arc::new(WorkQueue::<u32>::new());
        // A parked worker: spinning off, so that its `get` parks at once.
        queue.engine.state.lock().spin = false;
        let parked = tokio::spawn({
            let queue = queue.clone();
            async move { queue.get().await }
        });
        while queue.engine.state.lock().waiters.len() != 1 {
            tokio::task::yield_now().await;
        }
        // A second `get`, spinning, counted on to take the next item.
        queue.engine.state.lock().spin = true;
        let waker = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
        let mut cx = std::task::Context::from_waker(&waker);
        let mut spinning = Box::pin(queue.get());
        assert!(spinning.as_mut().poll(&mut cx).is_pending());
        assert_eq!(queue.engine.state.lock().spinners, 1);
        queue.add(7);
        // The add woke nobody: the spinner would take it. It is dropped instead.
        drop(spinning);
        assert_eq!(queue.engine.state.lock().spinners, 0);
        let got = tokio::time::timeout(std::time::Duration::from_secs(10), parked)
            .await
            .expect("the parked worker was woken")
            .unwrap();
        assert_eq!(got, Some(7));
    });
}
