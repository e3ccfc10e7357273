//! Namespace lifecycle through a real client: the namespaces a cluster starts with, defaults,
//! Terminating, the namespace controller deleting the content and reporting what holds it,
//! NamespaceLifecycle admission (403 in a terminating namespace, 404 in a missing one, the
//! namespaces that cannot be deleted), the finalize subresource.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::ObjectMeta;
use serde_json::json;

use super::common::{eventually, raw, server, status};

fn named<K: Default + kube::Resource>(name: &str) -> K {
    let mut object = K::default();
    object.meta_mut().name = Some(name.into());
    object
}

/// Creates the namespace `team`; returns the namespaces' API.
async fn team(client: &kube::Client) -> Api<Namespace> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(&PostParams::default(), &named("team"))
        .await
        .unwrap();
    namespaces
}

fn condition<'a>(namespace: &'a Namespace, kind: &str) -> (&'a str, &'a str, &'a str) {
    let conditions = namespace
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .expect("conditions");
    let found = conditions
        .iter()
        .find(|c| c.type_ == kind)
        .unwrap_or_else(|| panic!("no {kind} in {conditions:?}"));
    (
        found.status.as_str(),
        found.reason.as_deref().unwrap_or(""),
        found.message.as_deref().unwrap_or(""),
    )
}

#[tokio::test]
async fn the_server_starts_with_a_cluster_s_namespaces_labelled_by_name() {
    let server = server().await;
    let namespaces: Api<Namespace> = Api::all(server.client());
    let listed = namespaces.list(&ListParams::default()).await.unwrap();
    let names: Vec<String> = listed
        .items
        .iter()
        .map(|n| n.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(
        names,
        ["default", "kube-node-lease", "kube-public", "kube-system"]
    );
    for namespace in &listed.items {
        let name = namespace.metadata.name.as_deref().unwrap();
        let labels = namespace.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels
                .get("kubernetes.io/metadata.name")
                .map(String::as_str),
            Some(name)
        );
        let spec = namespace.spec.clone().unwrap_or_default();
        assert_eq!(spec.finalizers, Some(vec!["kubernetes".to_string()]));
        let phase = namespace.status.as_ref().and_then(|s| s.phase.clone());
        assert_eq!(phase.as_deref(), Some("Active"));
    }
    let selected = namespaces
        .list(&ListParams::default().labels("kubernetes.io/metadata.name=kube-system"))
        .await
        .unwrap();
    assert_eq!(selected.items.len(), 1);
}

#[tokio::test]
async fn the_name_label_is_set_on_create_and_put_back_on_update() {
    let server = server().await;
    let namespaces: Api<Namespace> = Api::all(server.client());
    let created = namespaces
        .create(&PostParams::default(), &named("team"))
        .await
        .unwrap();
    let labels = created.metadata.labels.clone().unwrap();
    assert_eq!(labels["kubernetes.io/metadata.name"], "team");
    let patched = namespaces
        .patch(
            "team",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"kubernetes.io/metadata.name": "other", "tier": "gold"}}, "spec": {"finalizers": []}})),
        )
        .await
        .unwrap();
    let labels = patched.metadata.labels.clone().unwrap();
    assert_eq!(labels["kubernetes.io/metadata.name"], "team");
    assert_eq!(labels["tier"], "gold");
    assert_eq!(
        patched.spec.unwrap().finalizers,
        Some(vec!["kubernetes".to_string()]),
        "spec.finalizers change only through the finalize subresource"
    );
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_content_then_the_namespace() {
    let server = server().await;
    let client = server.client();
    let namespaces = team(&client).await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "team");
    configmaps
        .create(&PostParams::default(), &named("settings"))
        .await
        .unwrap();
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}}},
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    let kept: Api<ConfigMap> = Api::namespaced(client, "default");
    kept.create(&PostParams::default(), &named("elsewhere"))
        .await
        .unwrap();

    let terminating = namespaces
        .delete("team", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("a namespace is answered while it terminates");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    let status = terminating.status.clone().unwrap();
    assert_eq!(status.phase.as_deref(), Some("Terminating"));
    assert_eq!(
        terminating.spec.unwrap().finalizers,
        Some(vec!["kubernetes".to_string()])
    );
    eventually("the namespace is gone", async || {
        namespaces.get_opt("team").await.unwrap().is_none()
    })
    .await;
    assert!(configmaps.get_opt("settings").await.unwrap().is_none());
    assert!(deployments.get_opt("web").await.unwrap().is_none());
    assert!(kept.get_opt("elsewhere").await.unwrap().is_some());
}

#[tokio::test]
async fn a_terminating_namespace_refuses_new_content_and_says_what_holds_it() {
    let server = server().await;
    let client = server.client();
    let namespaces = team(&client).await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client, "team");
    let held = ConfigMap {
        metadata: ObjectMeta {
            name: Some("held".into()),
            finalizers: Some(vec!["example.com/hold".into()]),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    configmaps
        .create(&PostParams::default(), &held)
        .await
        .unwrap();
    namespaces
        .delete("team", &DeleteParams::default())
        .await
        .unwrap();

    let refused = status(
        configmaps
            .create(&PostParams::default(), &named("late"))
            .await
            .unwrap_err(),
    );
    assert_eq!((refused.code, refused.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        refused.message,
        "configmaps \"late\" is forbidden: unable to create new content in namespace team because it is being terminated"
    );
    let details = refused.details.unwrap();
    assert_eq!(details.causes.len(), 1);
    assert_eq!(details.causes[0].reason, "NamespaceTerminating");
    assert_eq!(details.causes[0].field, "metadata.namespace");
    assert_eq!(
        details.causes[0].message,
        "namespace team is being terminated"
    );

    eventually("the controller reports the held content", async || {
        let team = namespaces.get("team").await.unwrap();
        team.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.len() == 5)
    })
    .await;
    let team = namespaces.get("team").await.unwrap();
    assert_eq!(
        condition(&team, "NamespaceContentRemaining"),
        (
            "True",
            "SomeResourcesRemain",
            "Some resources are remaining: configmaps. has 1 resource instances"
        )
    );
    assert_eq!(
        condition(&team, "NamespaceFinalizersRemaining"),
        (
            "True",
            "SomeFinalizersRemain",
            "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
        )
    );
    assert_eq!(
        condition(&team, "NamespaceDeletionContentFailure").0,
        "False"
    );
    let held = configmaps.get("held").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());

    configmaps
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    eventually("the namespace goes with its last object", async || {
        namespaces.get_opt("team").await.unwrap().is_none()
    })
    .await;
}

#[tokio::test]
async fn creating_in_a_missing_namespace_is_not_found() {
    let server = server().await;
    let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), "nowhere");
    let err = status(
        configmaps
            .create(&PostParams::default(), &named("c"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, "namespaces \"nowhere\" not found")
    );
}

#[tokio::test]
async fn the_system_namespaces_cannot_be_deleted() {
    let server = server().await;
    let namespaces: Api<Namespace> = Api::all(server.client());
    for name in ["default", "kube-system", "kube-public"] {
        let err = status(
            namespaces
                .delete(name, &DeleteParams::default())
                .await
                .unwrap_err(),
        );
        assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
        assert_eq!(
            err.message,
            format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
        );
        let namespace = namespaces.get(name).await.unwrap();
        assert!(namespace.metadata.deletion_timestamp.is_none());
    }
}

#[tokio::test]
async fn namespaces_are_deleted_one_at_a_time_and_finalized_through_their_subresource() {
    let server = server().await;
    let collection = raw(&server, "DELETE", "/api/v1/namespaces", &[], b"").await;
    collection.assert_status(405, "MethodNotAllowed");
    let discovery = raw(&server, "GET", "/api/v1", &[], b"").await.json();
    let resources = discovery["resources"].as_array().unwrap();
    let find = |name: &str| resources.iter().find(|r| r["name"] == name).cloned();
    let namespaces = find("namespaces").unwrap();
    assert!(
        !namespaces["verbs"]
            .as_array()
            .unwrap()
            .contains(&json!("deletecollection"))
    );
    assert_eq!(
        find("namespaces/finalize").unwrap()["verbs"],
        json!(["update"])
    );

    // A namespace held by content is let go by hand, as `kubectl replace --raw .../finalize`.
    let api: Api<Namespace> = Api::all(server.client());
    api.create(&PostParams::default(), &named("stuck"))
        .await
        .unwrap();
    server
        .create_json(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "namespace": "stuck", "finalizers": ["example.com/hold"]}}))
        .unwrap();
    api.delete("stuck", &DeleteParams::default()).await.unwrap();
    let mut stuck = serde_json::to_value(api.get("stuck").await.unwrap()).unwrap();
    stuck["spec"]["finalizers"] = json!([]);
    let finalized = raw(
        &server,
        "PUT",
        "/api/v1/namespaces/stuck/finalize",
        &[("Content-Type", "application/json")],
        stuck.to_string().as_bytes(),
    )
    .await;
    assert_eq!(
        finalized.status,
        200,
        "{}",
        String::from_utf8_lossy(&finalized.body)
    );
    assert!(api.get_opt("stuck").await.unwrap().is_none());
}

#[tokio::test]
async fn the_kubernetes_finalizer_of_a_new_namespace_is_no_ones_field() {
    // The Namespace strategy's `PrepareForCreate` adds the finalizer after the field manager
    // has recorded the create: `kubectl create namespace` owns only the name label, which
    // defaulting adds before.
    let server = server().await;
    let response = raw(
        &server,
        "POST",
        "/api/v1/namespaces?fieldManager=kubectl-create",
        &[("Content-Type", "application/json")],
        br#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"t1"},"spec":{},"status":{}}"#,
    )
    .await;
    assert_eq!(response.status, 201);
    let namespace = response.json();
    assert_eq!(namespace["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(namespace["status"]["phase"], "Active");
    assert_eq!(
        namespace["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}})
    );
}

#[tokio::test]
async fn the_root_ca_bundle_is_in_every_namespace_when_asked_for_and_comes_back() {
    let server = informer_testing::TestApiServer::builder()
        .root_ca_config_maps(true)
        .start()
        .await
        .unwrap();
    let client = server.client();
    team(&client).await;
    let ca = server.certificate_authority_pem().unwrap().to_owned();
    for namespace in ["default", "kube-system", "team"] {
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let mut bundle = None;
        eventually(&format!("kube-root-ca.crt in {namespace}"), async || {
            bundle = config_maps.get_opt("kube-root-ca.crt").await.unwrap();
            bundle.is_some()
        })
        .await;
        let bundle = bundle.unwrap();
        assert_eq!(bundle.data.unwrap_or_default()["ca.crt"], ca, "{namespace}");
        assert!(
            bundle
                .metadata
                .annotations
                .unwrap_or_default()
                .contains_key("kubernetes.io/description")
        );
    }
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    config_maps
        .delete("kube-root-ca.crt", &DeleteParams::default())
        .await
        .unwrap();
    eventually("kube-root-ca.crt made again", async || {
        config_maps
            .get_opt("kube-root-ca.crt")
            .await
            .unwrap()
            .is_some()
    })
    .await;
}

#[tokio::test]
async fn without_the_root_ca_bundle_a_namespace_holds_only_its_own_config_maps() {
    let server = server().await;
    let client = server.client();
    team(&client).await;
    for namespace in ["default", "team"] {
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let list = config_maps.list(&ListParams::default()).await.unwrap();
        assert!(list.items.is_empty(), "{namespace}: {:?}", list.items);
    }
}
