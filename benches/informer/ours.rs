//! This project's side of I1 and M1: a memory-backed `ListerWatcher` that decodes as
//! `KubeListerWatcher` does (or hands out prebuilt objects), and the I1 pipeline.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::stream::{self, StreamExt};
use informer::Deleted;
use informer::lister_watcher::{
    ListMeta, ListParams, ListWatchError, ListerWatcher, ObjectList, WatchEvent, WatchParams,
    WatchStream,
};
use informer::prelude::*;
use informer::store::index_fn;
use informer_runtime::informer::CancellationToken;
use informer_runtime::lister_watcher::BodyDecoder;
use k8s_openapi::api::core::v1::Pod;
use kube::Resource;
use serde::de::DeserializeOwned;
use tokio::sync::Semaphore;

use crate::perf_control;
use crate::support;
use crate::workload::{Kind, Template, cooperative, list_body, watch_body};

/// What the list returns.
pub enum ListSource<K> {
    /// Objects decoded before timing.
    Prebuilt(Arc<Vec<Arc<K>>>),
    /// A list response assembled from these lines as it is sent, decoded as it arrives.
    Lines(Arc<Vec<String>>, BodyDecoder),
}

/// What the watch sends.
pub enum WatchSource<K> {
    /// Events decoded before timing; the list stays alive (and keeps every object) until
    /// the source is dropped, after timing.
    Prebuilt(Arc<Vec<(Kind, Arc<K>)>>),
    /// Each event's line rendered as it is sent, decoded as it arrives.
    Lines {
        templates: Arc<Vec<Template>>,
        events: usize,
        decoder: BodyDecoder,
    },
}

/// The memory-backed `ListerWatcher` of I1 and M1: one list, then one watch that sends the
/// events and then stays open.
pub struct MemorySource<K> {
    list: Mutex<Option<ListSource<K>>>,
    watch: Mutex<Option<WatchSource<K>>>,
    /// The list's resource version (the number of listed pods, as in the workload).
    listed: usize,
    /// Prebuilt objects, kept once handed out until the source is dropped after timing:
    /// freeing replaced versions is not timed (WORKLOADS.md), neither when the watch replaces
    /// a listed object nor when its stream ends and drops the events it sent.
    kept: Mutex<Vec<Box<dyn std::any::Any + Send + Sync>>>,
}

impl<K> MemorySource<K> {
    pub fn new(list: ListSource<K>, watch: Option<WatchSource<K>>, listed: usize) -> Self {
        Self {
            list: Mutex::new(Some(list)),
            watch: Mutex::new(watch),
            listed,
            kept: Mutex::new(Vec::new()),
        }
    }
}

impl<K> MemorySource<K> {
    fn keep(&self, objects: impl std::any::Any + Send + Sync) {
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Box::new(objects));
    }
}

fn take<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    slot.lock().unwrap_or_else(PoisonError::into_inner).take()
}

#[async_trait]
impl<K> ListerWatcher<K> for MemorySource<K>
where
    K: Clone + DeserializeOwned + Send + Sync + 'static,
{
    async fn list(&self, params: &ListParams) -> Result<ObjectList<Arc<K>>, ListWatchError> {
        let mut items = Vec::new();
        let metadata = self
            .list_in_parts(params, &mut |part| items.extend(part))
            .await?;
        Ok(ObjectList {
            types: Default::default(),
            metadata,
            items,
        })
    }

    async fn list_in_parts(
        &self,
        _params: &ListParams,
        part: &mut (dyn FnMut(Vec<Arc<K>>) + Send),
    ) -> Result<ListMeta, ListWatchError> {
        let source = take(&self.list).expect("the benchmark source is listed once (no relist)");
        match source {
            ListSource::Prebuilt(objects) => {
                part(objects.iter().cloned().collect());
                self.keep(objects);
                Ok(ListMeta {
                    resource_version: Some(self.listed.to_string()),
                    ..ListMeta::default()
                })
            }
            ListSource::Lines(lines, decoder) => {
                decoder
                    .list_in_parts(list_body(lines, self.listed), part)
                    .await
            }
        }
    }

    async fn watch(
        &self,
        _params: &WatchParams,
        _resource_version: &str,
    ) -> Result<WatchStream<K>, ListWatchError> {
        let events: WatchStream<K> = match take(&self.watch) {
            Some(WatchSource::Prebuilt(events)) => {
                self.keep(events.clone());
                let n = events.len();
                cooperative((0..n).map(move |j| {
                    let (kind, obj) = &events[j];
                    let obj = obj.clone();
                    Ok(match kind {
                        Kind::Modified => WatchEvent::Modified(obj),
                        Kind::Deleted => WatchEvent::Deleted(obj),
                        Kind::Added => WatchEvent::Added(obj),
                    })
                }))
                .chain(stream::pending())
                .boxed()
            }
            Some(WatchSource::Lines {
                templates,
                events,
                decoder,
            }) => decoder
                .watch(watch_body(templates, events, self.listed))
                .chain(stream::pending())
                .boxed(),
            None => stream::pending().boxed(),
        };
        Ok(events)
    }
}

/// Counts notifications; releases one permit of `done` when it has seen `target`.
pub struct Counter {
    seen: AtomicUsize,
    target: usize,
    done: Arc<Semaphore>,
}

impl Counter {
    pub fn new(target: usize, done: &Arc<Semaphore>) -> Self {
        Self {
            seen: AtomicUsize::new(0),
            target,
            done: done.clone(),
        }
    }

    pub fn tick(&self) {
        if self.seen.fetch_add(1, Ordering::Relaxed) + 1 == self.target {
            self.done.add_permits(1);
        }
    }
}

/// Handlers 1 and 2: count (handler 1 also counts the adds of the first list apart).
struct CountingHandler {
    counter: Counter,
    listed: Option<Counter>,
}

impl<K> Handler<K> for CountingHandler {
    fn on_add(&self, _obj: &Arc<K>, _initial: bool) {
        // Any add, as kube-runtime's side counts `InitApply` and `Apply` alike: a first list
        // served from a real server's watch cache may lack the last objects created, which
        // then arrive as watch events (nothing else is written before the list is through).
        if let Some(c) = &self.listed {
            c.tick();
        }
        self.counter.tick();
    }
    fn on_update(&self, _old: &Arc<K>, _new: &Arc<K>) {
        self.counter.tick();
    }
    fn on_delete(&self, _deleted: &Deleted<K>) {
        self.counter.tick();
    }
}

/// Handler 3: one `add` of the object's key to the workqueue per notification (as
/// client-go's harness does).
struct EnqueueingHandler {
    counter: Counter,
    queue: Arc<WorkQueue<ObjectKey>>,
}

impl EnqueueingHandler {
    fn enqueue<K: Resource>(&self, obj: &K) {
        self.queue
            .add(ObjectKey::from_resource(obj).expect("objects have names"));
        self.counter.tick();
    }
}

impl<K: Resource> Handler<K> for EnqueueingHandler {
    fn on_add(&self, obj: &Arc<K>, _initial: bool) {
        self.enqueue(&**obj);
    }
    fn on_update(&self, _old: &Arc<K>, new: &Arc<K>) {
        self.enqueue(&**new);
    }
    fn on_delete(&self, deleted: &Deleted<K>) {
        match deleted {
            Deleted::Object(obj) => self.enqueue(&**obj),
            Deleted::FinalStateUnknown { key, .. } => {
                self.queue.add(key.clone());
                self.counter.tick();
            }
        }
    }
}

/// Timings of one run of a pipeline.
#[derive(Default)]
pub struct PipelineRun {
    /// From start until every handler has the list.
    pub listed: Duration,
    /// From start until everything was handled and the queue drained.
    pub total: Duration,
}

/// Workers draining the queue.
pub const WORKERS: usize = 2;

/// Runs this project's I1 pipeline over `lw` until every handler has seen `listed + events`
/// notifications and the queue is drained: two indexes (namespace, `node` by `node_of`),
/// three handlers, a workqueue drained by [`WORKERS`] tasks that look each key up in the
/// cache. `produce` is called once every handler has the list (the end-to-end variants
/// start their writers there).
pub async fn pipeline<K>(
    lw: Arc<dyn ListerWatcher<K>>,
    store: Option<Arc<dyn Indexer<K>>>,
    listed: usize,
    events: usize,
    node_of: fn(&K) -> Vec<String>,
    produce: impl FnOnce(),
) -> PipelineRun
where
    K: Resource + Clone + Send + Sync + 'static,
{
    let total = listed + events;
    let mut builder = SharedIndexInformer::builder(lw);
    if let Some(store) = store {
        builder = builder.store(store);
    }
    let informer = builder.build();
    informer
        .add_indexers([("node".to_owned(), index_fn(node_of))].into())
        .expect("a fresh index name");
    let queue = Arc::new(WorkQueue::<ObjectKey>::new());
    let listed_done = Arc::new(Semaphore::new(0));
    let all_done = Arc::new(Semaphore::new(0));
    for i in 0..2 {
        informer.add_handler(
            CountingHandler {
                counter: Counter::new(total, &all_done),
                // "The list is through" is judged by handler 1.
                listed: (i == 0).then(|| Counter::new(listed, &listed_done)),
            },
            None,
        );
    }
    informer.add_handler(
        EnqueueingHandler {
            counter: Counter::new(total, &all_done),
            queue: queue.clone(),
        },
        None,
    );

    let start = Instant::now();
    perf_control("enable");
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (queue, cache) = (queue.clone(), informer.indexer());
            tokio::spawn(async move {
                while let Some(key) = queue.get().await {
                    std::hint::black_box(cache.get(&key));
                    queue.forget(&key);
                    queue.done(&key);
                }
            })
        })
        .collect();
    if listed > 0 {
        let _ = listed_done.acquire().await.expect("open");
    }
    let listed_at = start.elapsed();
    produce();
    let _ = all_done.acquire_many(3).await.expect("open");
    queue.shut_down_with_drain(true).await;
    for w in workers {
        w.await.expect("worker");
    }
    let elapsed = start.elapsed();
    perf_control("disable");
    cancel.cancel();
    run.await
        .expect("informer task")
        .expect("informer runs once");
    PipelineRun {
        listed: listed_at,
        total: elapsed,
    }
}

/// The node a pod runs on, as the workloads index it.
pub fn pod_node(pod: &Pod) -> Vec<String> {
    support::node_of(pod)
}
