//! Controllers through a real `kube::Client` against the in-process API server: a controller
//! that creates and updates the children it owns, and informers shared between controllers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::support::{Warnings, eventually_async, server};
use informer_core::ObjectKey;
use informer_runtime::controller::{Action, Controller, ReconcileError, reconciler_fn};
use informer_runtime::factory::InformerFactory;
use informer_runtime::informer::CancellationToken;
use informer_testing::{RequestMatch, Verb};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client, Resource, ResourceExt};

fn deployment(name: &str, replicas: i32) -> Deployment {
    let mut d = Deployment::default();
    d.metadata.name = Some(name.into());
    d.metadata.namespace = Some("default".into());
    d.spec = Some(k8s_openapi::api::apps::v1::DeploymentSpec {
        replicas: Some(replicas),
        ..Default::default()
    });
    d
}

/// The child ConfigMap a Deployment should have: `<name>-settings` with its replica count,
/// controlled by the Deployment.
fn desired_child(parent: &Deployment) -> ConfigMap {
    let mut child = ConfigMap::default();
    child.metadata.name = Some(format!("{}-settings", parent.name_any()));
    child.metadata.namespace = parent.namespace();
    child.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: parent.name_any(),
        uid: parent.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]);
    let replicas = parent.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    child.data = Some(BTreeMap::from([(
        "replicas".to_string(),
        replicas.to_string(),
    )]));
    child
}

/// Creates the child if missing, replaces it if it differs.
async fn ensure_child(client: Client, parent: &Deployment) -> Result<Action, ReconcileError> {
    let api = Api::<ConfigMap>::namespaced(client, &parent.namespace().unwrap_or_default());
    let desired = desired_child(parent);
    match api.get_opt(&desired.name_any()).await? {
        None => {
            api.create(&PostParams::default(), &desired).await?;
        }
        Some(current) if current.data != desired.data => {
            let mut updated = desired;
            updated.metadata.resource_version = current.resource_version();
            api.replace(&updated.name_any(), &PostParams::default(), &updated)
                .await?;
        }
        Some(_) => {}
    }
    Ok(Action::Done)
}

#[tokio::test]
async fn controller_creates_and_updates_the_children_it_owns() {
    let server = server().await;
    let client = server.client();
    let deployments = Api::<Deployment>::namespaced(client.clone(), "default");
    deployments
        .create(&PostParams::default(), &deployment("web", 2))
        .await
        .unwrap();

    let factory = InformerFactory::new(client.clone());
    let reconciles = Arc::new(AtomicUsize::new(0));
    let (api_client, counter) = (client.clone(), reconciles.clone());
    let controller = Controller::<Deployment>::builder(&factory)
        .namespace("default")
        .owns::<ConfigMap>()
        .workers(2)
        .build(reconciler_fn(
            move |_key: ObjectKey, parent: Option<Arc<Deployment>>| {
                let (client, counter) = (api_client.clone(), counter.clone());
                async move {
                    counter.fetch_add(1, Ordering::SeqCst);
                    match parent {
                        // Children are garbage collected through their owner reference.
                        None => Ok(Action::Done),
                        Some(parent) => ensure_child(client, &parent).await,
                    }
                }
            },
        ))
        .unwrap();
    let children = controller.lister_of::<ConfigMap>().unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    let child_key = ObjectKey::new(Some("default"), "web-settings");
    let replicas_of = |lister: &informer_runtime::lister::Lister<ConfigMap>| {
        lister
            .get(&child_key)
            .and_then(|c| c.data.as_ref().map(|d| d["replicas"].clone()))
    };

    // Created, with the controller's owner reference.
    eventually_async("the child exists", async || {
        replicas_of(&children).as_deref() == Some("2")
    })
    .await;
    let child = children.get(&child_key).unwrap();
    let owner = &child.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("Deployment", "web", Some(true))
    );

    // The parent changes: the child follows.
    let mut web = deployments.get("web").await.unwrap();
    web.spec.as_mut().unwrap().replicas = Some(5);
    deployments
        .replace("web", &PostParams::default(), &web)
        .await
        .unwrap();
    eventually_async("the child is updated", async || {
        replicas_of(&children).as_deref() == Some("5")
    })
    .await;

    // Someone deletes or edits the child: its owner is reconciled and restores it.
    let configmaps = Api::<ConfigMap>::namespaced(client.clone(), "default");
    configmaps
        .delete("web-settings", &DeleteParams::default())
        .await
        .unwrap();
    eventually_async("the child is recreated", async || {
        replicas_of(&children).as_deref() == Some("5")
    })
    .await;
    let mut edited = configmaps.get("web-settings").await.unwrap();
    edited.data = Some(BTreeMap::from([("replicas".to_string(), "0".to_string())]));
    configmaps
        .replace("web-settings", &PostParams::default(), &edited)
        .await
        .unwrap();
    eventually_async("the edit is reverted", async || {
        configmaps.get("web-settings").await.unwrap().data.unwrap()["replicas"] == "5"
    })
    .await;

    // A ConfigMap nobody controls reconciles nothing.
    let before = reconciles.load(Ordering::SeqCst);
    let mut stray = ConfigMap::default();
    stray.metadata.name = Some("stray".into());
    configmaps
        .create(&PostParams::default(), &stray)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(reconciles.load(Ordering::SeqCst), before);

    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn two_controllers_watching_pods_open_one_watch() {
    let server = server().await;
    let client = server.client();
    let pods = Api::<Pod>::namespaced(client.clone(), "default");
    for name in ["a", "b"] {
        let mut pod = Pod::default();
        pod.metadata.name = Some(name.into());
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    server.faults().reset_request_counts();

    let factory = InformerFactory::new(client.clone());
    let seen = Arc::new(AtomicUsize::new(0));
    let counting = |seen: Arc<AtomicUsize>| {
        reconciler_fn(move |_key, _pod: Option<Arc<Pod>>| {
            seen.fetch_add(1, Ordering::SeqCst);
            async { Ok(Action::Done) }
        })
    };
    let first = Controller::<Pod>::builder(&factory)
        .name("first")
        .build(counting(seen.clone()))
        .unwrap();
    // The second one reconciles Deployments and maps Pods to them: the same Pod informer.
    let second = Controller::<Deployment>::builder(&factory)
        .name("second")
        .watches::<Pod>(|pod| vec![ObjectKey::new(pod.meta().namespace.as_deref(), "owner")])
        .build(reconciler_fn({
            let seen = seen.clone();
            move |_key, _d: Option<Arc<Deployment>>| {
                seen.fetch_add(1, Ordering::SeqCst);
                async { Ok(Action::Done) }
            }
        }))
        .unwrap();
    let cancel = CancellationToken::new();
    let runs = [
        tokio::spawn(first.run(cancel.clone())),
        tokio::spawn(second.run(cancel.clone())),
    ];
    eventually_async("both reconciled", async || seen.load(Ordering::SeqCst) >= 3).await;
    let faults = server.faults();
    // The reconciles can run from the list before the watch that follows it is opened.
    eventually_async("the Pod watch is open", async || {
        faults.request_count(RequestMatch::verb(Verb::Watch).resource("pods")) > 0
    })
    .await;
    let pod_watches = faults.request_count(RequestMatch::verb(Verb::Watch).resource("pods"));
    let pod_lists = faults.request_count(RequestMatch::verb(Verb::List).resource("pods"));
    assert_eq!(
        (pod_lists, pod_watches),
        (1, 1),
        "one list and one watch of Pods"
    );
    cancel.cancel();
    for run in runs {
        run.await.unwrap();
    }
}

#[tokio::test]
async fn caches_failing_to_list_are_reported_after_seconds_not_half_a_minute() {
    let server = server().await;
    // Every list of ConfigMaps is refused, as without RBAC (or a CRD not installed).
    server.faults().fail_next(
        RequestMatch::verb(Verb::List).resource("configmaps"),
        usize::MAX,
        informer_testing::FailureCode::Status(informer_testing::ApiError::forbidden(
            "system:serviceaccount:default:controller",
            "list",
            "configmaps",
            None,
        )),
    );
    let warnings = Warnings::default();
    let _guard = tracing::subscriber::set_default(warnings.clone());
    let factory = InformerFactory::new(server.client());
    let controller = Controller::<ConfigMap>::builder(&factory)
        .name("unsynced")
        .build(reconciler_fn(|_key, _cm: Option<Arc<ConfigMap>>| async {
            Ok::<_, ReconcileError>(Action::Done)
        }))
        .unwrap();
    let cancel = CancellationToken::new();
    let started = std::time::Instant::now();
    let run = tokio::spawn(controller.run(cancel.clone()));
    let reported = || {
        warnings
            .0
            .lock()
            .unwrap()
            .iter()
            .find(|w| w.contains("still waiting for caches to sync"))
            .cloned()
    };
    while reported().is_none() && started.elapsed() < Duration::from_secs(25) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let warning = reported().expect("the unsynced cache was reported within 25 s");
    assert!(
        warning.contains("forbidden"),
        "the warning says why: {warning}"
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_controller_dropped_without_running_says_so_and_one_run_or_added_does_not() {
    use informer_runtime::factory::InformerParams;
    use informer_runtime::manager::Manager;
    use informer_testing::MemoryListerWatcher;

    let warnings = Warnings::default();
    let _guard = tracing::subscriber::set_default(warnings.clone());
    let factory = InformerFactory::without_client();
    let _cms = factory.informer_from(InformerParams::all(), || {
        Arc::new(MemoryListerWatcher::<ConfigMap>::new())
    });
    let build = |name: &str| {
        Controller::<ConfigMap>::builder(&factory)
            .name(name)
            .build(reconciler_fn(|_key, _cm: Option<Arc<ConfigMap>>| async {
                Ok::<_, ReconcileError>(Action::Done)
            }))
            .unwrap()
    };
    let said = |name: &str| {
        warnings
            .0
            .lock()
            .unwrap()
            .iter()
            .any(|w| w.contains("dropped without running") && w.contains(name))
    };

    drop(build("forgotten"));
    assert!(said("forgotten"), "{:?}", warnings.0.lock().unwrap());

    let cancel = CancellationToken::new();
    cancel.cancel();
    build("ran").run(cancel).await;
    assert!(!said("ran"));

    let mut manager = Manager::with_factory(factory.clone());
    manager.add(build("added")).unwrap();
    drop(manager);
    assert!(!said("added"));
}
