use std::time::Duration;

use informer::core::queue::QueueMetrics;
use informer::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;

fn make_store() -> Arc<dyn Indexer<ConfigMap>> {
    Arc::new(ThreadSafeStore::<ConfigMap>::new())
}

fn make_queue(hooks: Arc<dyn QueueMetrics>) -> Arc<dyn Queue<ObjectKey>> {
    Arc::new(WorkQueue::builder().name("config").metrics(hooks).build())
}

#[derive(ControllerSpec)]
#[controller(for = ConfigMap, store = make_store, queue = make_queue)]
struct Configs;

/// Backends made from the controller's own state.
#[derive(ControllerSpec)]
#[controller(for = ConfigMap, store = Self::store, queue = Stateful::queue, name = "stateful")]
struct Stateful {
    queue_name: String,
}

impl Stateful {
    fn store(&self) -> Arc<dyn Indexer<ConfigMap>> {
        Arc::new(ThreadSafeStore::<ConfigMap>::new())
    }

    fn queue(&self, hooks: Arc<dyn QueueMetrics>) -> Arc<dyn Queue<ObjectKey>> {
        Arc::new(WorkQueue::builder().name(&self.queue_name).metrics(hooks).build())
    }
}

impl Reconcile for Stateful {
    async fn reconcile(
        &self,
        _ctx: &Context<Self>,
        _key: &ObjectKey,
        _cm: Option<Arc<ConfigMap>>,
    ) -> Result<Action, ReconcileError> {
        Ok(Action::Done)
    }
}

/// Backends returned as their own types, so that the struct can keep handles of them.
#[derive(ControllerSpec)]
#[controller(for = ConfigMap, store = Typed::store, queue = Typed::queue, name = "typed")]
struct Typed {
    store: Arc<ThreadSafeStore<ConfigMap>>,
}

impl Typed {
    fn store(&self) -> Arc<ThreadSafeStore<ConfigMap>> {
        self.store.clone()
    }

    fn queue(&self, hooks: Arc<dyn QueueMetrics>) -> Arc<WorkQueue<ObjectKey>> {
        Arc::new(WorkQueue::builder().metrics(hooks).build())
    }
}

impl Reconcile for Typed {
    async fn reconcile(
        &self,
        _ctx: &Context<Self>,
        _key: &ObjectKey,
        _cm: Option<Arc<ConfigMap>>,
    ) -> Result<Action, ReconcileError> {
        let _cached = self.store.len();
        Ok(Action::Done)
    }
}

impl Reconcile for Configs {
    async fn reconcile(
        &self,
        _ctx: &Context<Self>,
        _key: &ObjectKey,
        _cm: Option<Arc<ConfigMap>>,
    ) -> Result<Action, ReconcileError> {
        Ok(Action::requeue_after(Duration::from_secs(60)))
    }
}

fn main() {}
