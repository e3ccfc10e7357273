//! The garbage collector through a real client: background, foreground and orphan
//! propagation (`DeleteParams`, `propagationPolicy` in the query, the legacy
//! `orphanDependents`), deletecollection, dangling and cross-namespace owners, dependents with
//! finalizers, custom resources, a server without a collector, and the types whose dependents
//! are orphaned by default (Jobs, ReplicationControllers).

use informer_testing::{CustomResourceSpec, TestApiServer};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Event, ReplicationController};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::core::ObjectMeta;
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::common::{eventually, namespace, raw, server, status};

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    }
}

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        },
    }))
    .unwrap()
}

/// An owner reference to `owner`, blocking its deletion or not.
fn reference<K: Resource<DynamicType = ()>>(owner: &K, block: bool) -> OwnerReference {
    let mut reference = owner.controller_owner_ref(&()).expect("a stored owner");
    reference.block_owner_deletion = Some(block);
    reference
}

/// A ConfigMap owned by `owners`, with `finalizers`.
fn owned(name: &str, owners: Vec<OwnerReference>, finalizers: &[&str]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            owner_references: Some(owners),
            finalizers: (!finalizers.is_empty())
                .then(|| finalizers.iter().map(|f| f.to_string()).collect()),
            ..meta(name)
        },
        ..ConfigMap::default()
    }
}

async fn gone<K>(api: &Api<K>, name: &str) -> bool
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name).await.unwrap().is_none()
}

/// Removes an object's finalizers.
async fn release(api: &Api<ConfigMap>, name: &str) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
}

/// Deployments and ConfigMaps in `default`: owners and their dependents.
struct Fixture {
    deployments: Api<Deployment>,
    configmaps: Api<ConfigMap>,
}

impl Fixture {
    fn new(server: &TestApiServer) -> Self {
        let client = server.client();
        Self {
            deployments: Api::default_namespaced(client.clone()),
            configmaps: Api::default_namespaced(client),
        }
    }

    async fn owner(&self, name: &str) -> Deployment {
        self.deployments
            .create(&PostParams::default(), &deployment(name))
            .await
            .unwrap()
    }

    /// A ConfigMap owned by `owner` (blocking its deletion), with `finalizers`.
    async fn dependent(&self, name: &str, owner: &Deployment, finalizers: &[&str]) {
        self.configmaps
            .create(
                &PostParams::default(),
                &owned(name, vec![reference(owner, true)], finalizers),
            )
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn deleting_an_owner_deletes_its_dependents_in_the_background() {
    let server = server().await;
    let client = server.client();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let replica_sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client);
    let web = deployments
        .create(&PostParams::default(), &deployment("web"))
        .await
        .unwrap();
    let mut rs: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": "web-rs"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
    }))
    .unwrap();
    rs.metadata.owner_references = Some(vec![reference(&web, true)]);
    let rs = replica_sets
        .create(&PostParams::default(), &rs)
        .await
        .unwrap();
    configmaps
        .create(
            &PostParams::default(),
            &owned("web-config", vec![reference(&rs, true)], &[]),
        )
        .await
        .unwrap();

    let deleted = deployments
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        deleted.is_right(),
        "background deletion removes the owner at once: {deleted:?}"
    );
    eventually(
        "the ReplicaSet and, in turn, its ConfigMap are collected",
        async || gone(&replica_sets, "web-rs").await && gone(&configmaps, "web-config").await,
    )
    .await;
}

#[tokio::test]
async fn foreground_deletion_waits_for_blocking_dependents() {
    let server = server().await;
    let fixture = Fixture::new(&server);
    let web = fixture.owner("web").await;
    fixture.dependent("held", &web, &["example.com/hold"]).await;
    fixture.dependent("free", &web, &[]).await;
    let Fixture {
        deployments,
        configmaps,
    } = fixture;

    let marked = deployments
        .delete("web", &DeleteParams::foreground())
        .await
        .unwrap()
        .left()
        .expect("the owner stays while its dependents go");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(
        marked.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_string()])
    );
    eventually(
        "the free dependent is deleted, the held one marked",
        async || {
            let held = configmaps.get("held").await.unwrap();
            gone(&configmaps, "free").await && held.metadata.deletion_timestamp.is_some()
        },
    )
    .await;
    assert!(
        deployments.get_opt("web").await.unwrap().is_some(),
        "the owner waits for its blocking dependent"
    );
    release(&configmaps, "held").await;
    eventually(
        "the owner goes after its last blocking dependent",
        async || gone(&deployments, "web").await,
    )
    .await;
}

#[tokio::test]
async fn orphan_deletion_keeps_the_dependents_without_the_reference() {
    let server = server().await;
    let fixture = Fixture::new(&server);
    let web = fixture.owner("web").await;
    fixture.dependent("kept", &web, &[]).await;
    let Fixture {
        deployments,
        configmaps,
    } = fixture;

    let marked = deployments
        .delete("web", &DeleteParams::orphan())
        .await
        .unwrap()
        .left()
        .expect("the owner waits for its dependents to be orphaned");
    assert_eq!(marked.metadata.finalizers, Some(vec!["orphan".to_string()]));
    eventually("the owner goes", async || gone(&deployments, "web").await).await;
    let kept = configmaps.get("kept").await.unwrap();
    assert!(kept.owner_references().is_empty(), "{kept:?}");
}

#[tokio::test]
async fn propagation_in_the_query_and_the_legacy_orphan_dependents_are_honoured() {
    let server = server().await;
    let fixture = Fixture::new(&server);
    let (deployments, configmaps) = (&fixture.deployments, &fixture.configmaps);
    for (name, body, query) in [
        ("by-query", "", "?propagationPolicy=Orphan"),
        ("by-legacy-field", r#"{"orphanDependents": true}"#, ""),
    ] {
        let owner = fixture.owner(name).await;
        fixture
            .dependent(&format!("{name}-child"), &owner, &[])
            .await;
        let path = format!("/apis/apps/v1/namespaces/default/deployments/{name}{query}");
        let response = raw(
            &server,
            "DELETE",
            &path,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        )
        .await;
        assert_eq!(
            response.status,
            200,
            "{}",
            String::from_utf8_lossy(&response.body)
        );
        assert_eq!(response.json()["metadata"]["finalizers"], json!(["orphan"]));
        eventually("the owner goes", async || gone(deployments, name).await).await;
        let child = configmaps.get(&format!("{name}-child")).await.unwrap();
        assert!(child.owner_references().is_empty());
    }
}

#[tokio::test]
async fn orphan_dependents_false_asks_for_a_cascade_and_is_accepted() {
    let server = server().await;
    let client = server.client();
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client);
    configmaps
        .create(
            &PostParams::default(),
            &owned("held", vec![], &["example.com/hold"]),
        )
        .await
        .unwrap();
    let response = raw(
        &server,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/held",
        &[("Content-Type", "application/json")],
        br#"{"orphanDependents": false}"#,
    )
    .await;
    assert_eq!(
        response.status, 202,
        "kube-apiserver answers 202 when an object with finalizers stays"
    );
    assert!(response.json()["metadata"]["deletionTimestamp"].is_string());
}

#[tokio::test]
async fn invalid_delete_options_are_refused() {
    let server = server().await;
    namespace(&server, "x");
    server
        .create_json(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "x"}}))
        .unwrap();
    let path = "/api/v1/namespaces/x/configmaps/c";
    let json = [("Content-Type", "application/json")];
    let both = raw(
        &server,
        "DELETE",
        path,
        &json,
        br#"{"orphanDependents": true, "propagationPolicy": "Foreground"}"#,
    )
    .await;
    both.assert_status(422, "Invalid");
    assert_eq!(
        both.json()["message"],
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Foreground\": orphanDependents and deletionPropagation cannot be both set"
    );
    let unknown = raw(
        &server,
        "DELETE",
        &format!("{path}?propagationPolicy=Later"),
        &[],
        b"",
    )
    .await;
    unknown.assert_status(422, "Invalid");
    assert_eq!(
        unknown.json()["message"],
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Later\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
    );
    assert!(server.get_json("v1", "ConfigMap", Some("x"), "c").is_some());
}

#[tokio::test]
async fn deletecollection_propagates_to_each_object() {
    let server = server().await;
    let fixture = Fixture::new(&server);
    for name in ["a", "b"] {
        let owner = fixture.owner(name).await;
        fixture
            .dependent(&format!("{name}-child"), &owner, &[])
            .await;
    }
    let Fixture {
        deployments,
        configmaps,
    } = fixture;
    deployments
        .delete_collection(&DeleteParams::orphan(), &ListParams::default())
        .await
        .unwrap();
    eventually("both owners go", async || {
        deployments
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    })
    .await;
    let children = configmaps.list(&ListParams::default()).await.unwrap();
    assert_eq!(children.items.len(), 2, "orphaned, not deleted");
    assert!(
        children
            .items
            .iter()
            .all(|c| c.owner_references().is_empty())
    );
}

#[tokio::test]
async fn objects_whose_owner_does_not_exist_are_collected() {
    let server = server().await;
    let client = server.client();
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client);
    let stray = OwnerReference {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: "never-was".into(),
        uid: "00000000-0000-4000-8000-000000000000".into(),
        ..OwnerReference::default()
    };
    configmaps
        .create(&PostParams::default(), &owned("stray", vec![stray], &[]))
        .await
        .unwrap();
    eventually("the stray dependent is collected", async || {
        gone(&configmaps, "stray").await
    })
    .await;
}

#[tokio::test]
async fn an_owner_in_another_namespace_is_absent_and_an_event_says_so() {
    let server = server().await;
    namespace(&server, "a");
    namespace(&server, "b");
    let client = server.client();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "a");
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "b");
    let events: Api<Event> = Api::namespaced(client, "b");
    let owner = deployments
        .create(&PostParams::default(), &deployment("web"))
        .await
        .unwrap();
    configmaps
        .create(
            &PostParams::default(),
            &owned("cross", vec![reference(&owner, false)], &[]),
        )
        .await
        .unwrap();
    eventually("the dependent is collected", async || {
        gone(&configmaps, "cross").await
    })
    .await;
    assert!(deployments.get_opt("web").await.unwrap().is_some());
    let reported = events
        .list(&ListParams::default().fields("reason=OwnerRefInvalidNamespace"))
        .await
        .unwrap();
    assert_eq!(reported.items.len(), 1);
    let event = &reported.items[0];
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.involved_object.name.as_deref(), Some("cross"));
    assert!(
        event
            .message
            .as_deref()
            .unwrap_or("")
            .ends_with("does not exist in namespace \"b\""),
        "{event:?}"
    );
}

#[tokio::test]
async fn custom_resources_registered_in_rust_are_owners() {
    let server = server().await;
    server
        .register_custom_resource(CustomResourceSpec::namespaced(
            "example.com",
            "v1",
            "Widget",
            "widgets",
        ))
        .unwrap();
    let client = server.client();
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let widgets: Api<DynamicObject> = Api::default_namespaced_with(client.clone(), &resource);
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client);
    let widget = widgets
        .create(
            &PostParams::default(),
            &DynamicObject::new("w", &resource).data(json!({"spec": {}})),
        )
        .await
        .unwrap();
    let reference = OwnerReference {
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        name: "w".into(),
        uid: widget.uid().unwrap(),
        block_owner_deletion: Some(true),
        controller: Some(true),
    };
    configmaps
        .create(
            &PostParams::default(),
            &owned("w-config", vec![reference], &[]),
        )
        .await
        .unwrap();
    widgets
        .delete("w", &DeleteParams::foreground())
        .await
        .unwrap();
    eventually("the widget and its ConfigMap go", async || {
        gone(&widgets, "w").await && gone(&configmaps, "w-config").await
    })
    .await;
}

#[tokio::test]
async fn without_the_collector_dependents_stay() {
    let server = TestApiServer::builder()
        .garbage_collector(false)
        .start()
        .await
        .unwrap();
    let fixture = Fixture::new(&server);
    let web = fixture.owner("web").await;
    fixture.dependent("child", &web, &[]).await;
    let Fixture {
        deployments,
        configmaps,
    } = fixture;
    deployments
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    // Another namespace's deletion completes: the server's controllers have caught up with
    // every change before it, so the collector would have acted by now.
    namespace(&server, "marker");
    server
        .delete_json("v1", "Namespace", None, "marker")
        .unwrap();
    eventually("the namespace controller catches up", async || {
        server.get_json("v1", "Namespace", None, "marker").is_none()
    })
    .await;
    assert!(configmaps.get_opt("child").await.unwrap().is_some());
    let err = status(
        deployments
            .get("web")
            .await
            .expect_err("the owner itself is gone"),
    );
    assert_eq!(err.code, 404);
}

#[tokio::test(start_paused = true)]
async fn a_delayed_collector_lets_dependents_outlive_their_owner_for_the_delay() {
    let server = TestApiServer::builder()
        .garbage_collection_delay(std::time::Duration::from_secs(30))
        .start()
        .await
        .unwrap();
    let fixture = Fixture::new(&server);
    let web = fixture.owner("web").await;
    fixture.dependent("child", &web, &[]).await;
    let Fixture {
        deployments,
        configmaps,
    } = fixture;
    deployments
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(20)).await;
    assert!(
        configmaps.get_opt("child").await.unwrap().is_some(),
        "the dependent outlives its owner while the collector waits"
    );
    eventually("the collector acts after its delay", async || {
        gone(&configmaps, "child").await
    })
    .await;
}

/// A Job that owns a ConfigMap (a stand-in for its pods, which the server's Job has none of).
async fn job_with_dependent(server: &TestApiServer) -> (Api<Job>, Api<ConfigMap>) {
    let jobs: Api<Job> = Api::default_namespaced(server.client());
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "once"},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}],
        }}},
    }))
    .unwrap();
    let job = jobs.create(&PostParams::default(), &job).await.unwrap();
    configmaps
        .create(
            &PostParams::default(),
            &owned("pod-of-once", vec![reference(&job, true)], &[]),
        )
        .await
        .unwrap();
    (jobs, configmaps)
}

#[tokio::test]
async fn a_job_deleted_without_a_policy_orphans_its_pods_and_warns() {
    let server = server().await;
    let (jobs, configmaps) = job_with_dependent(&server).await;
    // As client-go and kube send it: a DELETE without a body.
    let response = raw(
        &server,
        "DELETE",
        "/apis/batch/v1/namespaces/default/jobs/once",
        &[],
        b"",
    )
    .await;
    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("warning"),
        Some(
            "299 - \"child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning\""
        )
    );
    let marked: Job = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(marked.metadata.finalizers, Some(vec!["orphan".to_string()]));
    eventually("the Job goes", async || gone(&jobs, "once").await).await;
    let kept = configmaps.get("pod-of-once").await.unwrap();
    assert!(kept.owner_references().is_empty(), "{kept:?}");
}

#[tokio::test]
async fn a_job_deleted_in_the_background_takes_its_pods_without_a_warning() {
    let server = server().await;
    let (jobs, configmaps) = job_with_dependent(&server).await;
    let response = raw(
        &server,
        "DELETE",
        "/apis/batch/v1/namespaces/default/jobs/once?propagationPolicy=Background",
        &[],
        b"",
    )
    .await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("warning"), None);
    eventually("the pod goes", async || {
        gone(&configmaps, "pod-of-once").await
    })
    .await;
    assert!(gone(&jobs, "once").await);
}

#[tokio::test]
async fn a_replication_controller_deleted_without_a_policy_orphans_its_pods() {
    let server = server().await;
    let controllers: Api<ReplicationController> = Api::default_namespaced(server.client());
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    let rc: ReplicationController = serde_json::from_value(json!({
        "metadata": {"name": "legacy"},
        "spec": {"replicas": 0, "template": {
            "metadata": {"labels": {"app": "legacy"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }},
    }))
    .unwrap();
    let rc = controllers
        .create(&PostParams::default(), &rc)
        .await
        .unwrap();
    configmaps
        .create(
            &PostParams::default(),
            &owned("pod-of-legacy", vec![reference(&rc, true)], &[]),
        )
        .await
        .unwrap();
    controllers
        .delete("legacy", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the controller goes", async || {
        gone(&controllers, "legacy").await
    })
    .await;
    let kept = configmaps.get("pod-of-legacy").await.unwrap();
    assert!(kept.owner_references().is_empty(), "{kept:?}");
}
