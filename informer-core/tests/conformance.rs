//! The conformance checks (`informer_core::conformance`) pass on the library's backends and
//! catch a broken one.

use std::sync::Arc;

use informer_core::conformance::{check_queue, check_store, check_store_with_seed};
use informer_core::queue::{PriorityQueue, QueueWrapper, WorkQueue};
use informer_core::store::{StoreOp, StoreWrapper};
use informer_core::{Indexer, ObjectKey, Queue, Store, StoreError, ThreadSafeStore};
use k8s_openapi::api::core::v1::{ConfigMap, Node};

#[test]
fn the_thread_safe_store_passes_with_several_seeds() {
    check_store(ThreadSafeStore::<ConfigMap>::new);
    for seed in [1, 2, 3] {
        check_store_with_seed(ThreadSafeStore::<ConfigMap>::new, seed);
    }
    check_store(ThreadSafeStore::<Node>::new);
}

/// A wrapper that forwards everything: it must pass as its inner store does.
struct Forwarding(ThreadSafeStore<ConfigMap>);

impl StoreWrapper for Forwarding {
    type Object = ConfigMap;
    fn inner(&self) -> &dyn Indexer<ConfigMap> {
        &self.0
    }
}

#[test]
fn a_forwarding_wrapper_passes() {
    check_store(|| Forwarding(ThreadSafeStore::new()));
}

/// A store that loses the deletes of its `apply` batches.
struct LosesBatchDeletes(ThreadSafeStore<ConfigMap>);

impl StoreWrapper for LosesBatchDeletes {
    type Object = ConfigMap;
    fn inner(&self) -> &dyn Indexer<ConfigMap> {
        &self.0
    }
    fn apply(
        &self,
        batch: Vec<StoreOp<ConfigMap>>,
    ) -> Result<Vec<Option<Arc<ConfigMap>>>, StoreError> {
        let upserts = batch
            .into_iter()
            .filter(|op| matches!(op, StoreOp::Upsert(_)))
            .collect();
        self.0.apply(upserts)
    }
}

#[test]
#[should_panic(expected = "store conformance")]
fn a_store_that_loses_writes_fails() {
    check_store(|| LosesBatchDeletes(ThreadSafeStore::new()));
}

#[tokio::test(start_paused = true)]
async fn the_library_queues_pass() {
    check_queue(WorkQueue::new).await;
    check_queue(PriorityQueue::new).await;
}

/// A queue that forgets nothing: `forget` does not reset the backoff.
struct NeverForgets(WorkQueue<ObjectKey>);

impl QueueWrapper for NeverForgets {
    type Item = ObjectKey;
    fn inner(&self) -> &dyn Queue<ObjectKey> {
        &self.0
    }
    fn forget(&self, _item: &ObjectKey) {}
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "forget resets them")]
async fn a_queue_that_breaks_a_rule_fails_naming_it() {
    check_queue(|| NeverForgets(WorkQueue::new())).await;
}

#[tokio::test]
async fn the_queue_check_runs_in_real_time_too() {
    check_queue(WorkQueue::new).await;
}
