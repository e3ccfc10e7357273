//! The core pieces working together, in memory: a FIFO feeds an indexed store, a handler turns
//! changes into keys on a rate-limited workqueue, and workers process the keys. One key fails
//! twice and is retried with backoff. Everything that happens is printed.
//!
//! ```sh
//! cargo run --release --example pipeline
//! ```
//!
//! (The reflector that fills the FIFO from an API server, and the controller runner that owns
//! the workers, live in `informer-runtime`; here both are played by a few lines of code.)

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use informer::apply::apply_deltas;
use informer::prelude::*;
use informer::store::index_fn;
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use kube::api::ObjectMeta;

fn pod(name: &str, node: &str, version: u32) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("shop".into()),
            resource_version: Some(version.to_string()),
            labels: Some(BTreeMap::from([("app".into(), "web".into())])),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: Some(node.into()),
            ..Default::default()
        }),
        ..Default::default()
    })
}

fn node_of(p: &Pod) -> Vec<String> {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .into_iter()
        .collect()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The cache, with an index by node beside the built-in namespace index.
    let store = Arc::new(ThreadSafeStore::<Pod>::new());
    store.add_indexers([("node".to_owned(), index_fn(node_of))].into())?;

    // The FIFO between "reflector" and cache knows the cache, to find vanished objects.
    let fifo = Arc::new(RealFifo::new(Some(store.clone() as Arc<dyn Store<Pod>>)));

    // The workqueue of keys, with client-go's default controller rate limiter.
    let queue = Arc::new(WorkQueue::<ObjectKey>::new());

    // A handler that prints each change and enqueues the object's key.
    let handler = {
        let queue = queue.clone();
        move |n: &Notification<Pod>| {
            let (what, key) = match n {
                Notification::Add {
                    object,
                    is_initial_list,
                } => (
                    if *is_initial_list {
                        "add (initial list)"
                    } else {
                        "add"
                    },
                    ObjectKey::from_resource(&**object),
                ),
                Notification::Update { new, .. } => ("update", ObjectKey::from_resource(&**new)),
                Notification::Delete(Deleted::Object(o)) => {
                    ("delete", ObjectKey::from_resource(&**o))
                }
                Notification::Delete(Deleted::FinalStateUnknown { key, .. }) => {
                    ("delete (vanished during relist)", Ok(key.clone()))
                }
            };
            match key {
                Ok(key) => {
                    println!("  handler: {what:<32} -> enqueue {key}");
                    queue.add(key);
                }
                Err(e) => println!("  handler: {what}: {e}"),
            }
        }
    };

    // The "reflector": an initial list, watch events, then a relist after which web-2 is gone.
    println!("reflector: list returns web-0, web-1, web-2");
    fifo.replace(
        vec![
            pod("web-0", "node-a", 1),
            pod("web-1", "node-a", 2),
            pod("web-2", "node-b", 3),
        ],
        "3".into(),
    )?;
    println!("reflector: watch sees web-1 modified, web-3 added");
    fifo.update(pod("web-1", "node-b", 4))?;
    fifo.add(pod("web-3", "node-b", 5))?;
    println!("reflector: the watch broke; the relist no longer has web-2");
    fifo.replace(
        vec![
            pod("web-0", "node-a", 1),
            pod("web-1", "node-b", 4),
            pod("web-3", "node-b", 5),
        ],
        "6".into(),
    )?;

    // The informer loop: pop, apply to the cache, notify the handler.
    while !fifo.is_empty() {
        let initial = !fifo.has_synced();
        fifo.pop(&mut |batch| {
            if let Err(e) = apply_deltas(&*store, batch, initial, &mut |n| handler.notify(&n)) {
                println!("  informer: {e}");
            }
        })
        .await?;
    }
    println!(
        "informer: synced = {}, {} pods cached",
        fifo.has_synced(),
        store.len()
    );

    // Workers: two tasks reconcile keys; shop/web-1 fails twice before it succeeds.
    let failures = Arc::new(AtomicU32::new(0));
    let workers: Vec<_> = (0..2)
        .map(|id| {
            let (queue, store, failures) = (queue.clone(), store.clone(), failures.clone());
            tokio::spawn(async move {
                while let Some(key) = queue.get().await {
                    let cached = store.get(&key);
                    let flaky = key.name() == "web-1" && failures.load(Ordering::SeqCst) < 2;
                    if flaky {
                        failures.fetch_add(1, Ordering::SeqCst);
                        println!(
                            "  worker {id}: {key}: failed (attempt {}), retry with backoff",
                            queue.num_requeues(&key) + 1
                        );
                        queue.add_rate_limited(key.clone());
                    } else {
                        match cached {
                            Some(p) => println!(
                                "  worker {id}: {key}: reconciled, runs on {}",
                                node_of(&p).join(",")
                            ),
                            None => println!("  worker {id}: {key}: gone from the cache, clean up"),
                        }
                        queue.forget(&key);
                    }
                    queue.done(&key);
                }
            })
        })
        .collect();

    // Let the retries happen (5 ms, then 10 ms backoff), then drain and stop.
    tokio::time::sleep(Duration::from_millis(100)).await;
    queue.shut_down_with_drain(true).await;
    for w in workers {
        w.await?;
    }

    // Listers read the cache through its indexes; nothing is copied.
    for node in ["node-a", "node-b"] {
        let mut names: Vec<_> = store
            .by_index("node", node)?
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        names.sort();
        println!("index node={node}: {names:?}");
    }
    println!(
        "done: web-1 needed {} retries",
        failures.load(Ordering::SeqCst)
    );
    Ok(())
}
