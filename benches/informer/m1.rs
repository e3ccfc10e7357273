//! M1: memory per cached object, time to sync and peak memory, 100,000 pods listed (no watch
//! events), for each way of caching them.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use futures::stream;
use informer::View;
use informer::prelude::*;
use informer::store::index_fn;
use informer_runtime::compact_store::CompactStore;
use informer_runtime::informer::CancellationToken;
use informer_runtime::lister_watcher::BodyDecoder;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::runtime::reflector;
use kube::runtime::{WatchStreamExt, watcher};
use serde::{Deserialize, Serialize};
use tokio::runtime::Runtime;

use crate::kube_side::Listed;
use crate::ours::{ListSource, MemorySource};
use crate::support;
use crate::workload::M1_PODS;
use crate::{emit, proc_status_bytes, settle};

/// What a controller that places pods reads of them: the M1 projection. (Only the node is
/// read here; the other fields are decoded and cached for what they cost.)
#[allow(dead_code)]
#[derive(Clone, Debug, View)]
#[view(of = Pod, metadata(uid, owner_references))]
pub struct PodView {
    pub metadata: ObjectMeta,
    pub spec: Option<PodSpecView>,
    pub status: Option<PodStatusView>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpecView {
    pub node_name: Option<String>,
}

#[allow(dead_code)]
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatusView {
    pub phase: Option<String>,
    #[serde(rename = "podIP")]
    pub pod_ip: Option<String>,
}

pub fn view_node(pod: &PodView) -> Vec<String> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .into_iter()
        .collect()
}

/// What an M1 job caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cache {
    /// Full pods in the default `ThreadSafeStore`.
    Decoded,
    /// Full pods in a `CompactStore`.
    Compact,
    /// `PodView`s in the default store.
    View,
    /// kube-runtime's reflector store.
    Kube,
}

/// `m1-<ours|compact|view|kube>-<mf|nomf>`.
pub fn job(rt: &Runtime, name: &str) {
    let drop_mf = name.ends_with("-nomf");
    let cache = match name.split('-').nth(1) {
        Some("ours") => Cache::Decoded,
        Some("compact") => Cache::Compact,
        Some("view") => Cache::View,
        Some("kube") => Cache::Kube,
        _ => panic!("unknown M1 job {name}"),
    };
    let lines = Arc::new(support::pod_lines(M1_PODS));
    settle();
    let before = proc_status_bytes("VmRSS");
    emit("rss_before", before);
    match cache {
        Cache::Kube => kube(rt, lines.clone(), drop_mf),
        Cache::View => ours::<PodView>(rt, &lines, drop_mf, None, view_node),
        Cache::Decoded => ours::<Pod>(rt, &lines, drop_mf, None, support::node_of),
        Cache::Compact => {
            let store = Arc::new(CompactStore::<Pod>::new());
            ours::<Pod>(rt, &lines, drop_mf, Some(store.clone()), support::node_of);
            compact_reads(&store);
        }
    }
    settle();
    let after = proc_status_bytes("VmRSS");
    emit("bytes_per_object", (after - before) / M1_PODS as f64);
    emit("peak_rss", proc_status_bytes("VmHWM"));
    std::hint::black_box(&lines);
}

/// This project's informer over a source that decodes the list as `KubeListerWatcher` does
/// (as it arrives, on the decode pool, handed to the cache in parts).
fn ours<K>(
    rt: &Runtime,
    lines: &Arc<Vec<String>>,
    drop_mf: bool,
    store: Option<Arc<dyn Indexer<K>>>,
    node_of: fn(&K) -> Vec<String>,
) where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    let decoder = BodyDecoder::new().skip_managed_fields(drop_mf);
    let lw = Arc::new(MemorySource::<K>::new(
        ListSource::Lines(lines.clone(), decoder),
        None,
        M1_PODS,
    ));
    let mut builder = SharedIndexInformer::builder(lw);
    if let Some(store) = store {
        builder = builder.store(store);
    }
    let informer = builder.build();
    informer
        .add_indexers([("node".to_owned(), index_fn(node_of))].into())
        .expect("a fresh index name");
    let cancel = CancellationToken::new();
    let start = Instant::now();
    let run = rt.spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    rt.block_on(informer.wait_for_sync());
    emit("sync_s", start.elapsed().as_secs_f64());
    assert_eq!(informer.store().len(), M1_PODS);
    let sample = informer.store().list_keys()[0].clone();
    let start = Instant::now();
    let reads = 100_000;
    for _ in 0..reads {
        std::hint::black_box(informer.store().get(&sample));
    }
    emit(
        "hot_get_ns",
        start.elapsed().as_nanos() as f64 / reads as f64,
    );
    cancel.cancel();
    rt.block_on(run).expect("informer task").expect("runs once");
    std::mem::forget(informer); // measured after this returns: the cache must stay
}

/// A compact store's read costs: objects not in its hot cache (keys far apart, each read
/// once), and its encoded size.
fn compact_reads(store: &CompactStore<Pod>) {
    let stats = store.stats();
    emit(
        "encoded_bytes_per_object",
        stats.encoded_bytes as f64 / stats.objects as f64,
    );
    let keys = store.list_keys();
    let reads = 20_000;
    let start = Instant::now();
    for i in 0..reads {
        let key = &keys[(i * 7_919) % keys.len()];
        std::hint::black_box(store.get(key).expect("cached"));
    }
    emit(
        "cold_get_ns",
        start.elapsed().as_nanos() as f64 / reads as f64,
    );
}

/// kube-runtime's reflector store over its watcher's events for the list (decoded with
/// `serde_json`, as kube decodes).
fn kube(rt: &Runtime, lines: Arc<Vec<String>>, drop_mf: bool) {
    let (reader, writer) = reflector::store::<Pod>();
    let source = stream::once(async { Ok(watcher::Event::Init) })
        .chain(
            Listed::<Pod>::Lines(lines)
                .into_stream()
                .map(|p| Ok(watcher::Event::InitApply(p))),
        )
        .chain(stream::once(async { Ok(watcher::Event::InitDone) }))
        .boxed();
    let start = Instant::now();
    rt.block_on(async {
        // `modify` is kube-runtime's way to change objects before they are stored.
        let stream = source.modify(move |pod: &mut Pod| {
            if drop_mf {
                pod.metadata.managed_fields = None;
            }
        });
        reflector::reflector(writer, stream)
            .for_each(|_| std::future::ready(()))
            .await;
        reader.wait_until_ready().await.expect("synced");
    });
    emit("sync_s", start.elapsed().as_secs_f64());
    assert_eq!(reader.len(), M1_PODS);
    std::mem::forget(reader);
}
