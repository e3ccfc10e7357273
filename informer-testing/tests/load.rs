//! A load test on 127.0.0.1, bounded in count and time: 20,000 objects, 1,000 open watches,
//! a watcher that never reads, and unpaged lists of everything. The server must stay
//! responsive (`/version` latency is measured on its own thread while the lists run, and the
//! percentiles printed) and its memory must stay under a stated bound, then return to its own
//! accounting's zero once everything is deleted, and be reused when as much is created again.
//!
//! A test binary of its own, so that no other test shares the process whose resident memory
//! it measures.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use informer_testing::TestApiServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use serde_json::json;
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;

const NAMESPACES: usize = 20;
const OBJECTS: usize = 20_000;
const WATCHES: usize = 1_000;
/// Each ConfigMap's payload.
const PAYLOAD: usize = 400;
/// Rounds of two concurrent unpaged lists of every ConfigMap.
const LIST_ROUNDS: usize = 5;

/// `/version` while the lists run, on a noisy shared 2-core machine (unoptimized): before
/// this server's snapshots, p99 was 0.6–1.3 s and the maximum up to 1.9 s.
const P99_BOUND: Duration = Duration::from_millis(250);
const MAX_BOUND: Duration = Duration::from_secs(1);
/// The process's resident memory may grow by at most this much over the whole test (the
/// server, and the 1,000 watch clients and the list responses in the same process; measured
/// about 250 MiB).
const RSS_GROWTH_BOUND_MIB: f64 = 512.0;
/// Creating the objects again after deleting them may grow resident memory by at most this
/// much: the first time they took about 90 MiB; the memory their deletion freed is reused.
const RSS_REUSE_BOUND_MIB: f64 = 48.0;

fn create_objects(server: &TestApiServer) {
    for i in 0..OBJECTS {
        server
            .create_json(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i}"), "namespace": format!("load-{}", i % NAMESPACES), "labels": {"app": "load"}},
                "data": {"payload": "x".repeat(PAYLOAD)}
            }))
            .expect("configmap");
    }
}

async fn delete_objects(client: &kube::Client) {
    for n in 0..NAMESPACES {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &format!("load-{n}"));
        api.delete_collection(&DeleteParams::default(), &ListParams::default())
            .await
            .expect("deletecollection");
    }
}

fn rss_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0 / (1024.0 * 1024.0)
}

/// The soft limit on open files, if known.
fn open_files_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Measures `GET /version` on its own thread and runtime (so the test's own tasks do not
/// delay the measurement) until told to stop; returns (start, latency) samples.
fn probe(
    config: kube::Config,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<(Instant, Duration)>> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let client = kube::Client::try_from(config).expect("client");
            let mut samples = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let start = Instant::now();
                client.apiserver_version().await.expect("/version");
                samples.push((start, start.elapsed()));
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            samples
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_stays_responsive_and_small_under_load() {
    let began = Instant::now();
    // Each watch is a connection, with a socket on both ends in this process.
    let watches = match open_files_limit() {
        Some(limit) if limit < 2 * WATCHES + 256 => {
            let fit = limit.saturating_sub(256) / 2;
            println!("only {limit} open files allowed: {fit} watches instead of {WATCHES}");
            fit
        }
        _ => WATCHES,
    };
    let server = TestApiServer::builder()
        .plain_http()
        .history_bytes_limit(32 << 20)
        .watch_backlog_limit(10_000, 2 << 20)
        .start()
        .await
        .expect("server");
    let rss_start = rss_mib();
    // What a fresh server holds (system namespaces, bootstrap RBAC, APIServices, ...).
    let seeded = server.stats();

    for n in 0..NAMESPACES {
        server
            .create_json(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("load-{n}")}}))
            .expect("namespace");
    }
    create_objects(&server);
    let created = server.stats();
    println!(
        "{OBJECTS} objects created in {:?}: {} bytes of JSON, RSS {:.0} MiB",
        began.elapsed(),
        created.object_bytes,
        rss_mib()
    );

    // The watches: one namespace each, from now, reading every event.
    let client = server.client();
    let from = server.resource_version().to_string();
    let modified = Arc::new(AtomicUsize::new(0));
    let mut watchers = Vec::new();
    for w in 0..watches {
        let api: Api<ConfigMap> =
            Api::namespaced(client.clone(), &format!("load-{}", w % NAMESPACES));
        let (from, modified) = (from.clone(), modified.clone());
        watchers.push(tokio::spawn(async move {
            let params = WatchParams::default().timeout(290);
            let mut events = api.watch(&params, &from).await.expect("watch").boxed();
            while let Some(event) = events.next().await {
                if let Ok(WatchEvent::Modified(_)) = event {
                    modified.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    // And one on a raw connection, over all namespaces, that never reads.
    let mut stalled = TcpStream::connect(server.address()).await.expect("connect");
    let request = format!(
        "GET /api/v1/configmaps?watch=true&resourceVersion={from} HTTP/1.1\r\nHost: {}\r\n\r\n",
        server.address()
    );
    stalled.write_all(request.as_bytes()).await.expect("send");
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.faults().open_watches() < watches + 1 {
        assert!(
            Instant::now() < deadline,
            "watches did not open: {:?}",
            server.stats()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("{} watches open after {:?}", watches + 1, began.elapsed());

    // The lists, with `/version` measured meanwhile, and writes: one change per namespace
    // (every watch sees one) and large changes in a namespace no reader watches, which only
    // the stalled watcher receives, until it falls too far behind.
    let stop = Arc::new(AtomicBool::new(false));
    let prober = probe(server.config(), stop.clone());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let writer = {
        let client = client.clone();
        let server_stats = Arc::new(server.faults());
        tokio::spawn(async move {
            for n in 0..NAMESPACES {
                let api: Api<ConfigMap> = Api::namespaced(client.clone(), &format!("load-{n}"));
                let patch = json!({"data": {"changed": "yes"}});
                api.patch(
                    &format!("cm-{n}"),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .expect("patch");
            }
            drop(server_stats);
        })
    };
    let mut rss_peak = rss_mib();
    let lists_began = Instant::now();
    for _ in 0..LIST_ROUNDS {
        let lists = (0..2).map(|_| {
            let client = client.clone();
            async move {
                let request = http::Request::get("/api/v1/configmaps")
                    .body(Vec::new())
                    .expect("request");
                client.request_text(request).await.expect("list").len()
            }
        });
        let sizes = futures::future::join_all(lists).await;
        rss_peak = rss_peak.max(rss_mib());
        assert!(sizes.iter().all(|s| *s > OBJECTS * PAYLOAD), "{sizes:?}");
    }
    let lists_ended = Instant::now();
    stop.store(true, Ordering::Relaxed);
    let samples = prober.join().expect("probe");
    writer.await.expect("writes");

    let mut during: Vec<Duration> = samples
        .iter()
        .filter(|(start, _)| *start >= lists_began && *start <= lists_ended)
        .map(|(_, latency)| *latency)
        .collect();
    during.sort();
    assert!(!during.is_empty(), "no /version sample while the lists ran");
    let (p50, p90, p99, max) = (
        percentile(&during, 0.5),
        percentile(&during, 0.9),
        percentile(&during, 0.99),
        *during.last().expect("samples"),
    );
    println!(
        "/version while {} unpaged lists of {OBJECTS} ran ({:?}): {} samples, p50 {p50:?}, p90 {p90:?}, p99 {p99:?}, max {max:?}",
        2 * LIST_ROUNDS,
        lists_ended - lists_began,
        during.len()
    );
    assert!(p99 < P99_BOUND, "p99 {p99:?}");
    assert!(max < MAX_BOUND, "max {max:?}");

    // Every watch saw its namespace's change.
    let deadline = Instant::now() + Duration::from_secs(30);
    while modified.load(Ordering::Relaxed) < watches {
        assert!(
            Instant::now() < deadline,
            "{} of {watches} watches saw their change",
            modified.load(Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The stalled watcher: large changes until it is closed for falling behind.
    let bulk: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    bulk.create(
        &Default::default(),
        &serde_json::from_value(json!({"metadata": {"name": "bulk"}})).expect("cm"),
    )
    .await
    .expect("create");
    let mut changes = 0;
    while server.stats().slow_watches_closed == 0 {
        assert!(
            changes < 1_000,
            "the stalled watch was never closed: {:?}",
            server.stats()
        );
        changes += 1;
        let patch = json!({"data": {"blob": format!("{changes}{}", "y".repeat(64 << 10))}});
        bulk.patch("bulk", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("patch");
    }
    rss_peak = rss_peak.max(rss_mib());
    let loaded = server.stats();
    println!("the stalled watch was closed after {changes} changes of 64 KiB: {loaded:?}");
    assert_eq!(loaded.watches, watches, "only the stalled watch was closed");
    assert!(loaded.history_bytes <= 32 << 20, "{loaded:?}");
    assert!(
        loaded.watch_backlog_bytes <= watches * (2 << 20),
        "{loaded:?}"
    );
    drop(stalled);

    // Delete everything, as a user would: a deletecollection per namespace.
    for w in watchers {
        w.abort();
    }
    delete_objects(&client).await;
    bulk.delete("bulk", &DeleteParams::default())
        .await
        .expect("delete");
    server.faults().compact();
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.faults().open_watches() > 0 {
        assert!(
            Instant::now() < deadline,
            "watches did not close: {:?}",
            server.stats()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let emptied = server.stats();
    rss_peak = rss_peak.max(rss_mib());
    let rss_end = rss_mib();
    println!(
        "RSS: {rss_start:.0} MiB at start, peak {rss_peak:.0} MiB, {rss_end:.0} MiB after deleting everything; \
         the server's own accounting: {} -> {} object bytes; total {:?}",
        loaded.object_bytes,
        emptied.object_bytes,
        began.elapsed()
    );
    assert_eq!(
        emptied.objects,
        seeded.objects + 2 * NAMESPACES,
        "only what a fresh server holds, and the test's namespaces and their default \
         ServiceAccounts, are left"
    );
    // The emptied namespaces and their ServiceAccounts: about 11 KiB.
    assert!(
        emptied.object_bytes < seeded.object_bytes + 16_000,
        "{seeded:?} -> {emptied:?}"
    );
    assert_eq!((emptied.history_changes, emptied.history_bytes), (0, 0));
    assert!(
        rss_peak - rss_start < RSS_GROWTH_BOUND_MIB,
        "RSS grew by {:.0} MiB",
        rss_peak - rss_start
    );

    // As many objects again: the memory the deleted ones held is reused, not added to.
    create_objects(&server);
    let rss_again = rss_mib();
    println!(
        "RSS after creating the {OBJECTS} objects again: {rss_again:.0} MiB ({:+.0} MiB)",
        rss_again - rss_end
    );
    assert!(
        rss_again - rss_end < RSS_REUSE_BOUND_MIB,
        "creating the objects again grew RSS by {:.0} MiB",
        rss_again - rss_end
    );
    delete_objects(&client).await;
    assert_eq!(server.stats().objects, seeded.objects + 2 * NAMESPACES);
}
