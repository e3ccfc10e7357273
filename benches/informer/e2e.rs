//! I1 end to end over HTTP: the same pipelines listing and watching an API server through
//! `kube::Client`, while writers change the objects. Against the in-process `TestApiServer`
//! (pods, writes applied straight to its store) and against a real API server
//! (`informer_testing::EnvTest`: apiextensions-apiserver on etcd, which serves custom
//! resources only: a `PodLike` custom resource whose objects are the workload's pods).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use informer_runtime::lister_watcher::KubeListerWatcher;
use informer_testing::envtest::EnvTest;
use informer_testing::{CustomResourceSpec, TestApiServer};
use k8s_openapi::api::core::v1::{Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::NamespaceResourceScope;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::runtime::Runtime;

use crate::ours::{self, PipelineRun};
use crate::workload::{Kind, event};
use crate::{emit, kube_side, proc_status_bytes, support};

/// Pods listed from the in-process server.
pub const LISTED: usize = 10_000;
/// Watch events the in-process server streams.
pub const EVENTS: usize = 20_000;
/// Objects listed from the real server (created through its API before timing).
pub const REAL_LISTED: usize = 2_000;
/// Watch events the real server streams (writes through its API, by [`WRITERS`] writers).
pub const REAL_EVENTS: usize = 10_000;
/// Concurrent writers against the real server (each owns the pods `p % WRITERS`, so every
/// pod's events stay in order).
const WRITERS: usize = 8;

/// The workload's pod as a custom resource of the real server.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct PodLike {
    #[serde(rename = "apiVersion", default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    pub metadata: ObjectMeta,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<PodSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<PodStatus>,
}

const GROUP: &str = "bench.informer.dev";
const KIND: &str = "PodLike";
const PLURAL: &str = "podlikes";

impl Resource for PodLike {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> std::borrow::Cow<'_, str> {
        KIND.into()
    }
    fn group(_: &()) -> std::borrow::Cow<'_, str> {
        GROUP.into()
    }
    fn version(_: &()) -> std::borrow::Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> std::borrow::Cow<'_, str> {
        PLURAL.into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

fn pod_like_node(p: &PodLike) -> Vec<String> {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .into_iter()
        .collect()
}

/// The first `n` pods as objects to create (no server-set fields).
fn creatable(n: usize) -> Vec<Value> {
    support::pod_lines(n)
        .iter()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).expect("valid JSON");
            let meta = v["metadata"].as_object_mut().expect("metadata");
            for field in [
                "resourceVersion",
                "uid",
                "managedFields",
                "creationTimestamp",
            ] {
                meta.remove(field);
            }
            v
        })
        .collect()
}

/// `e2e-<ours|kube>` and `e2e-real-<ours|kube>`: one run on a fresh server.
pub fn job(rt: &Runtime, name: &str) {
    let ours = name.ends_with("-ours");
    let run = if name.starts_with("e2e-real") {
        real(rt, ours)
    } else {
        in_process(rt, ours)
    };
    let Some((run, events)) = run else {
        emit("skipped", 1.0);
        return;
    };
    emit("listed_seconds", run.listed.as_secs_f64());
    emit("rate", support::rate(events, run.total - run.listed));
    emit("peak_rss", proc_status_bytes("VmHWM"));
}

fn in_process(rt: &Runtime, ours: bool) -> Option<(PipelineRun, usize)> {
    // Its garbage collector is off: the generated pods name ReplicaSets that do not exist as
    // their owners.
    let server = rt.block_on(async {
        TestApiServer::builder()
            .garbage_collector(false)
            .history_limit(4 * EVENTS)
            .bookmark_interval(Duration::from_secs(60))
            .start()
            .await
            .expect("the test API server starts")
    });
    let base = creatable(LISTED);
    for pod in &base {
        server.create_json(pod.clone()).expect("create a pod");
    }
    let server = Arc::new(server);
    let produce = {
        let server = server.clone();
        move || {
            std::thread::spawn(move || {
                for j in 0..EVENTS {
                    let (kind, p) = event(j, LISTED);
                    let mut pod = base[p].clone();
                    pod["metadata"]["labels"]["rev"] = Value::String(j.to_string());
                    match kind {
                        Kind::Modified => {
                            server.update_json(pod).expect("update");
                        }
                        Kind::Added => {
                            server.create_json(pod).expect("create");
                        }
                        Kind::Deleted => {
                            let ns = pod["metadata"]["namespace"].as_str().expect("namespace");
                            let name = pod["metadata"]["name"].as_str().expect("name");
                            server
                                .delete_json("v1", "Pod", Some(ns), name)
                                .expect("delete");
                        }
                    }
                }
            });
        }
    };
    let client = {
        let _runtime = rt.enter(); // kube's client spawns its buffer task
        server.client()
    };
    let run = if ours {
        let lw = Arc::new(KubeListerWatcher::new(Api::<Pod>::all(client)));
        rt.block_on(ours::pipeline(
            lw,
            None,
            LISTED,
            EVENTS,
            ours::pod_node,
            produce,
        ))
    } else {
        let source = watcher(Api::<Pod>::all(client), watcher::Config::default())
            .default_backoff()
            .boxed();
        rt.block_on(kube_side::pipeline(source, LISTED, EVENTS, false, produce))
    };
    // The server's connections end with it (inside the runtime).
    let _runtime = rt.enter();
    drop(server);
    Some((run, EVENTS))
}

fn real(rt: &Runtime, ours: bool) -> Option<(PipelineRun, usize)> {
    let spec = CustomResourceSpec::namespaced(GROUP, "v1", KIND, PLURAL);
    let env = rt.block_on(async {
        match EnvTest::builder().custom_resource(spec).start().await {
            Ok(env) => Some(env),
            Err(e) => {
                eprintln!("I1 against the real API server skipped: {e}");
                None
            }
        }
    })?;
    let client = {
        let _runtime = rt.enter();
        env.client()
    };
    let objects: Vec<PodLike> = creatable(REAL_LISTED)
        .into_iter()
        .map(|mut v| {
            v["apiVersion"] = Value::String(format!("{GROUP}/v1"));
            v["kind"] = Value::String(KIND.to_owned());
            v["metadata"]["namespace"] = Value::String("default".to_owned());
            serde_json::from_value(v).expect("a pod is a PodLike")
        })
        .collect();
    let api: Api<PodLike> = Api::namespaced(client.clone(), "default");
    rt.block_on(
        futures::stream::iter(objects.iter().cloned())
            .map(|o| {
                let api = api.clone();
                async move {
                    api.create(&PostParams::default(), &o)
                        .await
                        .expect("create")
                }
            })
            .buffer_unordered(WRITERS)
            .count(),
    );
    // Joined before the server stops: a watch event can reach the informer before its
    // writer has the response.
    let writers = Arc::new(Mutex::new(None));
    let produce = {
        let (client, writers) = (client.clone(), writers.clone());
        move || {
            let handle = std::thread::spawn(move || write_events(client, objects));
            *writers.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle);
        }
    };
    let run = if ours {
        let lw = Arc::new(KubeListerWatcher::new(Api::<PodLike>::all(client)));
        rt.block_on(ours::pipeline(
            lw,
            None,
            REAL_LISTED,
            REAL_EVENTS,
            pod_like_node,
            produce,
        ))
    } else {
        let source = watcher(Api::<PodLike>::all(client), watcher::Config::default())
            .default_backoff()
            .boxed();
        rt.block_on(kube_side::pipeline(
            source,
            REAL_LISTED,
            REAL_EVENTS,
            false,
            produce,
        ))
    };
    if let Some(handle) = writers
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
    {
        handle.join().expect("the writers finish");
    }
    let _runtime = rt.enter();
    env.stop();
    Some((run, REAL_EVENTS))
}

/// The I1 events against the real server, each pod's in order, [`WRITERS`] pods at a time,
/// on a runtime of its own.
fn write_events(client: Client, objects: Vec<PodLike>) {
    let writers = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the writers' runtime");
    let objects = Arc::new(objects);
    writers.block_on(futures::future::join_all((0..WRITERS).map(|w| {
        let api: Api<PodLike> = Api::namespaced(client.clone(), "default");
        let objects = objects.clone();
        async move {
            for j in (0..REAL_EVENTS).filter(|j| event(*j, REAL_LISTED).1 % WRITERS == w) {
                let (kind, p) = event(j, REAL_LISTED);
                let name = objects[p].metadata.name.clone().expect("named");
                match kind {
                    Kind::Modified => {
                        let patch =
                            serde_json::json!({"metadata": {"labels": {"rev": j.to_string()}}});
                        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                            .await
                            .expect("update");
                    }
                    Kind::Deleted => {
                        api.delete(&name, &DeleteParams::default())
                            .await
                            .expect("delete");
                    }
                    Kind::Added => {
                        api.create(&PostParams::default(), &objects[p])
                            .await
                            .expect("create");
                    }
                }
            }
        }
    })));
}
