//! Back within seconds after an outage, on both servers: an informer with the default
//! reflector settings (client-go's backoff parameters) is current again moments after the
//! API server comes back, restart after restart.
//!
//! client-go's reflector, measured against the real server, converged 29 s, 50 s and more
//! than 90 s after the server was back: its backoff keeps growing across outages (it resets
//! only after two quiet minutes) and applies even to the relist a `410` asks for. This one
//! starts its backoff over once the server answers, and relists at once after a `410` from a
//! watch that was delivering events.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use informer_runtime::{KubeListerWatcher, ReflectorConfig, SharedIndexInformer};
use kube::core::DynamicObject;

use super::recorder::{Recorder, Running};
use super::server::{Options, Server, create, eventually, on_both_servers, widget, widgets};

/// Retries `request` while the server is coming back (connection errors, and the real
/// server's 429 "storage is (re)initializing" while its watch cache fills).
async fn retrying<T, F: Future<Output = Result<T, kube::Error>>>(
    mut request: impl FnMut() -> F,
) -> T {
    let mut attempts = 0;
    loop {
        match request().await {
            Ok(value) => return value,
            Err(e) => {
                attempts += 1;
                assert!(attempts < 100, "the server is not back: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// How many times the API server restarts.
const RESTARTS: usize = 4;

/// How long a cache may take to be current once the server is back (generous: the machine
/// is shared and loaded).
///
/// - The fake restarts in no time: the informer resumes (or relists at once after the `410`
///   of a restart that lost history); 5 s leaves room for a loaded machine.
/// - The real server is down for its restart (a second or two), and the reflector notices
///   it is back at its next retry: retries while it is down are 0.8, 1.6, then 3.2 s apart
///   (each stretched by up to twice by jitter, as client-go's), so the server may wait up to
///   about 6 s to be asked again after a slow restart. 10 s covers that and the relist.
fn converged_within(server: &Server) -> Duration {
    match server {
        Server::Fake(_) => Duration::from_secs(5),
        Server::Real(_) => Duration::from_secs(10),
    }
}

async fn cache_is_current_within_seconds_after_every_restart(server: &Server) {
    let api = widgets(server.client());
    create(&api, "before", &[], 1).await;
    let informer: SharedIndexInformer<DynamicObject> =
        SharedIndexInformer::builder(Arc::new(KubeListerWatcher::new(widgets(server.client()))))
            .reflector_config(ReflectorConfig::default())
            .build();
    let recorder = Recorder::new("outage");
    informer.add_handler(recorder.handler(), None);
    let running = Running::start(informer);
    eventually("the first list", || running.cached().len() == 1).await;
    let bound = converged_within(server);
    let mut took = Vec::new();
    for round in 0..RESTARTS {
        server.restart_apiserver().await;
        // The server answers again from here.
        let back = Instant::now();
        // The client's pooled connection died with the server: its first request may fail.
        let name = format!("after-{round}");
        let (written, post, list) = (
            widget(&name, &[], 1),
            kube::api::PostParams::default(),
            kube::api::ListParams::default(),
        );
        retrying(|| api.create(&post, &written)).await;
        let expected: Vec<String> = retrying(|| api.list(&list))
            .await
            .items
            .iter()
            .filter_map(|o| o.metadata.name.clone())
            .collect();
        eventually("the cache is current", || {
            let cached = running.cached();
            cached.len() == expected.len()
                && expected.iter().all(|name| {
                    cached
                        .values()
                        .any(|c| c.metadata.name.as_ref() == Some(name))
                })
        })
        .await;
        took.push(back.elapsed());
    }
    eprintln!(
        "{}: cache current {took:?} after each restart",
        server.name()
    );
    assert!(
        took.iter().all(|t| *t < bound),
        "{}: from server back to cache current, per restart: {took:?} (bound {bound:?})",
        server.name()
    );
    running.stop().await.expect("a consistent history");
}

on_both_servers!(
    cache_is_current_within_seconds_after_every_apiserver_restart,
    Options::DEFAULT,
    cache_is_current_within_seconds_after_every_restart
);
