//! kube-runtime's side of I1 and M1, its closest equivalent of the pipeline: what
//! `Controller::new` builds (`reflector` into a store, `applier` with a concurrency of 2).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use futures::stream::{self, BoxStream};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::Resource;
use kube::runtime::controller::{Action, ReconcileRequest};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{applier, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::Semaphore;

use crate::ours::{Counter, PipelineRun, WORKERS};
use crate::perf_control;
use crate::workload::{Kind, Template, cooperative, event};

/// Where kube-runtime's I1 events come from.
pub enum Events<K> {
    /// Decoded before timing (with `serde_json`, as kube decodes).
    Prebuilt(Vec<(Kind, K)>),
    /// Decoded with `serde_json` from their lines as they are sent.
    OnTheFly(Arc<Vec<Template>>, usize, usize),
}

impl<K: DeserializeOwned + Send + 'static> Events<K> {
    /// The events as `(kind, object)`, one unit of tokio's budget each.
    pub fn into_stream(self) -> BoxStream<'static, (Kind, K)> {
        match self {
            Events::Prebuilt(events) => cooperative(events.into_iter()).boxed(),
            Events::OnTheFly(templates, count, listed) => cooperative((0..count).map(move |j| {
                let (kind, p) = event(j, listed);
                let line = templates[p].render(kind, j, listed);
                match serde_json::from_str::<kube::api::WatchEvent<K>>(&line).expect("valid JSON") {
                    kube::api::WatchEvent::Added(o)
                    | kube::api::WatchEvent::Modified(o)
                    | kube::api::WatchEvent::Deleted(o) => (kind, o),
                    _ => unreachable!("the templates render objects"),
                }
            }))
            .boxed(),
        }
    }
}

/// Where kube-runtime's listed objects come from.
pub enum Listed<K> {
    Prebuilt(Vec<K>),
    /// Decoded with `serde_json` when listed.
    Lines(Arc<Vec<String>>),
}

impl<K: DeserializeOwned + Send + 'static> Listed<K> {
    /// The objects one by one, decoded as they are sent.
    pub fn into_stream(self) -> BoxStream<'static, K> {
        match self {
            Listed::Prebuilt(objects) => cooperative(objects.into_iter()).boxed(),
            Listed::Lines(lines) => {
                let n = lines.len();
                cooperative(
                    (0..n).map(move |i| serde_json::from_str(&lines[i]).expect("valid JSON")),
                )
                .boxed()
            }
        }
    }
}

pub type KubeEvent<K> = Result<watcher::Event<K>, watcher::Error>;

/// The I1 source as kube-runtime's watcher would emit it: `Init`, one `InitApply` per listed
/// object, `InitDone`, then `Apply`/`Delete` per event.
pub fn source<K: DeserializeOwned + Send + 'static>(
    listed: Listed<K>,
    events: Events<K>,
) -> BoxStream<'static, KubeEvent<K>> {
    stream::once(async { Ok(watcher::Event::Init) })
        .chain(
            listed
                .into_stream()
                .map(|p| Ok(watcher::Event::InitApply(p))),
        )
        .chain(stream::once(async { Ok(watcher::Event::InitDone) }))
        .chain(events.into_stream().map(|(kind, pod)| {
            Ok(match kind {
                Kind::Deleted => watcher::Event::Delete(pod),
                Kind::Added | Kind::Modified => watcher::Event::Apply(pod),
            })
        }))
        .boxed()
}

/// Keeps what it is given until dropped (prebuilt objects stay alive until timing ends).
pub struct Keeper<T>(Option<Mutex<Vec<T>>>);

impl<T> Keeper<T> {
    pub fn new(keep: bool, capacity: usize) -> Self {
        Self(keep.then(|| Mutex::new(Vec::with_capacity(capacity))))
    }

    fn keep(&self, item: impl FnOnce() -> T) {
        if let Some(kept) = &self.0 {
            kept.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(item());
        }
    }
}

/// Runs kube-runtime's closest equivalent of the pipeline over `source` until the source
/// ends (or, if it never ends, until both counters reached `listed + events`), the applier
/// has run every reconcile and stopped. `produce` is called once the counters have the
/// list. kube-runtime has no secondary indexes and no per-handler buffers: its counting runs
/// inline in the stream, which flatters it.
pub async fn pipeline<K>(
    source: BoxStream<'static, KubeEvent<K>>,
    listed: usize,
    events: usize,
    keep: bool,
    produce: impl FnOnce() + Send + 'static,
) -> PipelineRun
where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let total = listed + events;
    let (reader, writer) = reflector::store::<K>();
    let all_done = Arc::new(Semaphore::new(0));
    let listed_done = Arc::new(Semaphore::new(0));
    let counters = [
        Counter::new(total, &all_done),
        Counter::new(total, &all_done),
    ];
    let list_counter = Counter::new(listed, &listed_done);
    // Dropped after timing (the stream that uses it is dropped inside).
    let keeper = Arc::new(Keeper::<K>::new(keep, total));
    let kept = keeper.clone();
    let requests = reflector::reflector(writer, source).filter_map(move |event| {
        let keeper = &kept;
        let request = match event {
            Ok(watcher::Event::Apply(obj) | watcher::Event::InitApply(obj)) => {
                counters.iter().for_each(Counter::tick);
                list_counter.tick();
                let obj_ref = ObjectRef::from_obj(&obj);
                keeper.keep(|| obj);
                Some(Ok(ReconcileRequest::from(obj_ref)))
            }
            Ok(watcher::Event::Delete(obj)) => {
                counters.iter().for_each(Counter::tick);
                keeper.keep(|| obj);
                None
            }
            Ok(watcher::Event::Init | watcher::Event::InitDone) => None,
            Err(e) => Some(Err(e)),
        };
        std::future::ready(request)
    });
    // Ends the input once both counters are done (the end-to-end stream never ends itself).
    let finished = {
        let all_done = all_done.clone();
        async move {
            let _ = all_done.acquire_many(2).await;
        }
    };
    let requests = requests.take_until(finished);
    let start = Instant::now();
    perf_control("enable");
    let listed_at = Arc::new(Mutex::new(None));
    let producer = {
        let listed_at = listed_at.clone();
        tokio::spawn(async move {
            let _ = listed_done.acquire().await;
            *listed_at.lock().unwrap_or_else(PoisonError::into_inner) = Some(start.elapsed());
            produce();
        })
    };
    let config = kube::runtime::Config::default().concurrency(WORKERS as u16);
    applier(
        |obj: Arc<K>, _ctx: Arc<()>| {
            // As `Controller::run`: each reconcile on its own task.
            tokio::spawn(async move {
                std::hint::black_box(&obj);
                Ok::<_, std::convert::Infallible>(Action::await_change())
            })
            .map(|r| r.expect("reconcile task"))
        },
        |_obj, _err: &std::convert::Infallible, _ctx| Action::await_change(),
        Arc::new(()),
        reader,
        requests,
        config,
    )
    .for_each(|r| {
        if let Err(e) = r {
            // Deleted objects are "not found" when their reconcile comes: expected.
            if !matches!(e, kube::runtime::controller::Error::ObjectNotFound(_)) {
                panic!("kube-runtime applier failed: {e}");
            }
        }
        std::future::ready(())
    })
    .await;
    let total_time = start.elapsed();
    perf_control("disable");
    producer.await.expect("producer");
    let listed = listed_at
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .unwrap_or_default();
    drop(keeper);
    PipelineRun {
        listed,
        total: total_time,
    }
}

/// Decodes the first `n` pods with `serde_json` (as kube does).
pub fn decode_pods(lines: &[String]) -> Vec<Pod> {
    lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("gen_pods.py writes valid pods"))
        .collect()
}
