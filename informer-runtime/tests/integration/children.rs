//! Declared children through a real `kube::Client` against the in-process API server:
//! applied with server-side apply, owned by owner references in the parent's namespace and by
//! labels in another, deleted when no longer wanted or when their parent is gone (also a
//! parent deleted while the controller was down), put back when edited, never rewritten when
//! they already hold what is wanted.

use std::collections::BTreeMap;
use std::time::Duration;

use super::support::{Warnings, create_namespace, eventually, eventually_async, server};
use futures::StreamExt;
use informer_runtime::controller::{
    APPLIED_HASH_ANNOTATION, CONTROLLER_LABEL, Controller, OWNER_ANNOTATION, OWNER_UID_LABEL,
    WatchOptions,
};
use informer_runtime::factory::InformerFactory;
use informer_runtime::informer::CancellationToken;
use informer_runtime::metrics::ControllerMetrics;
use informer_testing::{FailureCode, Faults, RequestMatch, TestApiServer, Verb};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStatus};
use k8s_openapi::api::core::v1::{ConfigMap, ResourceQuota, Secret};
use k8s_openapi::api::events::v1::Event as ApiEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use tokio::task::JoinHandle;

/// A parent ConfigMap in `namespace` with `data`.
pub(super) fn parent(namespace: &str, name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.namespace = Some(namespace.into());
    cm.metadata.labels = Some(BTreeMap::from([("role".into(), "parent".into())]));
    cm.data = Some(
        data.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    cm
}

/// One Secret per entry of the parent's data, named `<parent>-<key>`, holding the value.
fn secrets_for(cm: &ConfigMap) -> Vec<Secret> {
    let name = cm.name_any();
    cm.data
        .iter()
        .flatten()
        .map(|(key, value)| {
            let mut secret = Secret::default();
            secret.metadata.name = Some(format!("{name}-{key}"));
            secret.string_data = None;
            secret.data = Some(BTreeMap::from([(
                "value".to_owned(),
                k8s_openapi::ByteString(value.clone().into_bytes()),
            )]));
            secret
        })
        .collect()
}

/// A copy of the parent in namespace `mirror`, named `<namespace>.<name>`.
fn copy_for(cm: &ConfigMap) -> Option<ConfigMap> {
    let mut copy = ConfigMap::default();
    copy.metadata.name = Some(format!("{}.{}", cm.namespace()?, cm.name_any()));
    copy.metadata.namespace = Some("mirror".into());
    copy.data = cm.data.clone();
    Some(copy)
}

/// A controller of parent ConfigMaps in `default` with Secret children, running.
fn run_secrets_controller(client: Client) -> (CancellationToken, JoinHandle<()>) {
    let factory = InformerFactory::new(client);
    let controller = Controller::<ConfigMap>::builder(&factory)
        .name("secrets-of")
        .namespace("default")
        .label_selector("role=parent")
        .children(secrets_for)
        .build_children_only()
        .unwrap();
    let cancel = CancellationToken::new();
    (cancel.clone(), tokio::spawn(controller.run(cancel)))
}

/// A controller copying parent ConfigMaps of every namespace into namespace `mirror`.
fn run_mirror(client: Client) -> (CancellationToken, JoinHandle<()>) {
    let factory = InformerFactory::new(client);
    let controller = Controller::<ConfigMap>::builder(&factory)
        .name("mirror")
        .label_selector("role=parent")
        .children_with(copy_for, WatchOptions::new().namespace("mirror"))
        .build_children_only()
        .unwrap();
    let cancel = CancellationToken::new();
    (cancel.clone(), tokio::spawn(controller.run(cancel)))
}

async fn secret(client: &Client, name: &str) -> Option<Secret> {
    Api::<Secret>::namespaced(client.clone(), "default")
        .get_opt(name)
        .await
        .unwrap()
}

async fn value_of(client: &Client, name: &str) -> Option<String> {
    let secret = secret(client, name).await?;
    let value = secret.data?.remove("value")?;
    String::from_utf8(value.0).ok()
}

/// Waits until secret `name`'s value is `value` (`None`: until it is gone), saying `what`.
async fn until_value(client: &Client, name: &str, value: Option<&str>, what: &str) {
    eventually_async(what, async || {
        value_of(client, name).await.as_deref() == value
    })
    .await;
}

/// Merge-patches `name` through `api` (the test fails if the server refuses).
async fn merge<K>(api: &Api<K>, name: &str, patch: serde_json::Value)
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
}

fn secret_patches(server: &TestApiServer) -> u64 {
    server
        .faults()
        .request_count(RequestMatch::verb(Verb::Patch).resource("secrets"))
}

/// A fresh server, and the secrets controller running there once parent `default/app` (data
/// `token: t1`) has its child, secret `app-token` holding `t1`.
struct Started {
    /// Bind it (`server: _server` if unused): `..` would drop it, and the server with it.
    server: TestApiServer,
    client: Client,
    parents: Api<ConfigMap>,
    /// The parent as created.
    parent: ConfigMap,
    cancel: CancellationToken,
    run: JoinHandle<()>,
}

async fn started_with_app_token() -> Started {
    let server = server().await;
    let client = server.client();
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let parent = parents
        .create(
            &PostParams::default(),
            &parent("default", "app", &[("token", "t1")]),
        )
        .await
        .unwrap();
    let (cancel, run) = run_secrets_controller(client.clone());
    until_value(
        &client,
        "app-token",
        Some("t1"),
        "secret app-token is created",
    )
    .await;
    Started {
        server,
        client,
        parents,
        parent,
        cancel,
        run,
    }
}

#[tokio::test]
async fn children_in_the_parents_namespace_are_applied_with_a_controlling_owner_reference() {
    let Started {
        server: _server,
        client,
        parent: created,
        cancel,
        run,
        ..
    } = started_with_app_token().await;
    let child = secret(&client, "app-token").await.unwrap();
    let refs = child.owner_references();
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert_eq!(
        (
            refs[0].kind.as_str(),
            refs[0].api_version.as_str(),
            refs[0].name.as_str(),
            refs[0].uid.as_str(),
            refs[0].controller,
            refs[0].block_owner_deletion,
        ),
        (
            "ConfigMap",
            "v1",
            "app",
            created.uid().unwrap().as_str(),
            Some(true),
            Some(true)
        )
    );
    let labels = child.labels();
    assert_eq!(
        labels.get(CONTROLLER_LABEL).map(String::as_str),
        Some("secrets-of")
    );
    assert!(
        !labels.contains_key(OWNER_UID_LABEL),
        "tied by owner reference, not labels"
    );
    assert!(child.annotations().contains_key(APPLIED_HASH_ANNOTATION));
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_changed_parent_updates_its_children_and_an_unchanged_one_writes_nothing() {
    let Started {
        server,
        client,
        parents,
        cancel,
        run,
        ..
    } = started_with_app_token().await;

    merge(&parents, "app", json!({"data": {"token": "t2"}})).await;
    until_value(
        &client,
        "app-token",
        Some("t2"),
        "secret app-token holds the new value",
    )
    .await;

    // Changes of the parent that change no child reconcile it, and write nothing.
    let patches = secret_patches(&server);
    for i in 0..3 {
        merge(
            &parents,
            "app",
            json!({"metadata": {"annotations": {"touched": i.to_string()}}}),
        )
        .await;
    }
    // A child created afterwards is written: the reconciles of the touches ran before it.
    merge(&parents, "app", json!({"data": {"marker": "m"}})).await;
    until_value(
        &client,
        "app-marker",
        Some("m"),
        "secret app-marker is created",
    )
    .await;
    assert_eq!(
        secret_patches(&server) - patches,
        1,
        "one apply (app-marker); app-token already held what was wanted"
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_child_whose_quantities_the_server_canonicalized_is_not_rewritten() {
    // The server stores `0.5` as `500m` and `1024Mi` as `1Gi`: the child holds what is
    // wanted, and changes of the parent that change no child write nothing.
    let server = server().await;
    let client = server.client();
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    parents
        .create(&PostParams::default(), &parent("default", "team", &[]))
        .await
        .unwrap();
    let factory = InformerFactory::new(client.clone());
    let controller = Controller::<ConfigMap>::builder(&factory)
        .name("quota-of")
        .namespace("default")
        .label_selector("role=parent")
        .children(|cm: &ConfigMap| {
            let quota: ResourceQuota = serde_json::from_value(json!({
                "metadata": {"name": format!("{}-quota", cm.name_any())},
                "spec": {"hard": {"requests.cpu": "0.5", "requests.memory": "1024Mi", "pods": 10}}
            }))
            .expect("a ResourceQuota");
            Some(quota)
        })
        .build_children_only()
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    let quotas = Api::<ResourceQuota>::namespaced(client, "default");
    eventually_async("the quota is created, canonicalized", async || {
        quotas
            .get_opt("team-quota")
            .await
            .unwrap()
            .is_some_and(|q| {
                let hard = q.spec.unwrap_or_default().hard.unwrap_or_default();
                hard.get("requests.cpu").map(|q| q.0.as_str()) == Some("500m")
            })
    })
    .await;
    let writes = || {
        server
            .faults()
            .request_count(RequestMatch::verb(Verb::Patch).resource("resourcequotas"))
    };
    let before = writes();
    for i in 0..3 {
        merge(
            &parents,
            "team",
            json!({"metadata": {"annotations": {"touched": i.to_string()}}}),
        )
        .await;
    }
    // The reconciles of the touches ran once a later change's child is there.
    merge(
        &parents,
        "team",
        json!({"metadata": {"labels": {"done": "yes"}}}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(writes(), before, "the quota already held what was wanted");
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn children_no_longer_wanted_are_deleted() {
    let server = server().await;
    let client = server.client();
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    parents
        .create(
            &PostParams::default(),
            &parent("default", "app", &[("a", "1"), ("b", "2")]),
        )
        .await
        .unwrap();
    let (cancel, run) = run_secrets_controller(client.clone());
    eventually_async("both secrets exist", async || {
        secret(&client, "app-a").await.is_some() && secret(&client, "app-b").await.is_some()
    })
    .await;

    merge(&parents, "app", json!({"data": {"b": null}})).await;
    eventually_async("secret app-b is deleted", async || {
        secret(&client, "app-b").await.is_none()
    })
    .await;
    assert!(
        secret(&client, "app-a").await.is_some(),
        "app-a is still wanted"
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_child_edited_by_someone_else_is_put_back() {
    let Started {
        server,
        client,
        cancel,
        run,
        ..
    } = started_with_app_token().await;

    let applied = secret_patches(&server);
    let secrets = Api::<Secret>::namespaced(client.clone(), "default");
    // "tampered", base64-encoded.
    let tamper = Patch::Merge(json!({"data": {"value": "dGFtcGVyZWQ="}}));
    let tampered = secrets
        .patch("app-token", &PatchParams::default(), &tamper)
        .await
        .unwrap();
    assert_eq!(
        tampered.data.unwrap()["value"].0,
        b"tampered",
        "the edit was made"
    );
    until_value(
        &client,
        "app-token",
        Some("t1"),
        "secret app-token holds t1 again",
    )
    .await;
    assert!(
        secret_patches(&server) >= applied + 2,
        "the edit, and the controller's apply putting it back"
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn children_in_another_namespace_are_tied_by_labels_and_deleted_with_their_parent() {
    let server = server().await;
    let client = server.client();
    create_namespace(&client, "mirror").await;
    create_namespace(&client, "team-a").await;
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "team-a");
    let created = parents
        .create(
            &PostParams::default(),
            &parent("team-a", "settings", &[("mode", "fast")]),
        )
        .await
        .unwrap();
    let (cancel, run) = run_mirror(client.clone());

    let copies = Api::<ConfigMap>::namespaced(client.clone(), "mirror");
    eventually_async("the copy exists", async || {
        copies.get_opt("team-a.settings").await.unwrap().is_some()
    })
    .await;
    let copy = copies.get("team-a.settings").await.unwrap();
    assert!(
        copy.owner_references().is_empty(),
        "owner references cannot cross namespaces"
    );
    assert_eq!(
        copy.labels().get(OWNER_UID_LABEL),
        created.uid().as_ref(),
        "the parent's UID"
    );
    assert_eq!(
        copy.annotations().get(OWNER_ANNOTATION).map(String::as_str),
        Some("team-a/settings")
    );
    assert_eq!(copy.data, created.data);

    parents
        .delete("settings", &DeleteParams::default())
        .await
        .unwrap();
    eventually_async("the copy is deleted with its source", async || {
        copies.get_opt("team-a.settings").await.unwrap().is_none()
    })
    .await;
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn children_of_a_parent_deleted_while_the_controller_was_down_are_deleted_at_start() {
    let server = server().await;
    let client = server.client();
    create_namespace(&client, "mirror").await;
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    for name in ["kept", "gone"] {
        parents
            .create(
                &PostParams::default(),
                &parent("default", name, &[("k", name)]),
            )
            .await
            .unwrap();
    }
    let copies = Api::<ConfigMap>::namespaced(client.clone(), "mirror");
    let (cancel, run) = run_mirror(client.clone());
    eventually_async("both copies exist", async || {
        copies.get_opt("default.kept").await.unwrap().is_some()
            && copies.get_opt("default.gone").await.unwrap().is_some()
    })
    .await;
    cancel.cancel();
    run.await.unwrap();

    // Down: the parent goes, and nothing sees it go.
    parents
        .delete("gone", &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(copies.get_opt("default.gone").await.unwrap().is_some());

    let (cancel, run) = run_mirror(client.clone());
    eventually_async("the orphaned copy is deleted", async || {
        copies.get_opt("default.gone").await.unwrap().is_none()
    })
    .await;
    assert!(
        copies.get_opt("default.kept").await.unwrap().is_some(),
        "the copy of a parent that exists stays"
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_child_outside_the_namespace_its_kind_is_watched_in_fails_the_reconcile_as_terminal() {
    let server = server().await;
    let client = server.client();
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    parents
        .create(
            &PostParams::default(),
            &parent("default", "app", &[("k", "v")]),
        )
        .await
        .unwrap();
    let factory = InformerFactory::new(client.clone());
    let controller = Controller::<ConfigMap>::builder(&factory)
        .name("strays")
        .label_selector("role=parent")
        // Children watched in "mirror", but put in "elsewhere".
        .children_with(
            |cm: &ConfigMap| {
                let mut stray = copy_for(cm)?;
                stray.metadata.namespace = Some("elsewhere".into());
                Some(stray)
            },
            WatchOptions::new().namespace("mirror"),
        )
        .build_children_only()
        .unwrap();
    let probe = controller.probe();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    eventually_async("the reconcile failed with a terminal error", async || {
        probe.sample().stats.terminal_errors >= 1
    })
    .await;
    assert!(
        Api::<ConfigMap>::namespaced(client.clone(), "elsewhere")
            .get_opt("default.app")
            .await
            .unwrap()
            .is_none(),
        "nothing is written where the controller could never see it"
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn writes_to_children_are_not_waited_for_in_a_cache_that_cannot_see_them() {
    // No bookmarks: a cache that sees no event never moves.
    let server = TestApiServer::builder()
        .bookmark_interval(Duration::from_secs(3600))
        .start()
        .await
        .unwrap();
    let client = server.client();
    create_namespace(&client, "mirror").await;
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    parents
        .create(
            &PostParams::default(),
            &parent("default", "app", &[("k", "v")]),
        )
        .await
        .unwrap();
    let (cancel, run) = run_mirror(client.clone());
    let copies = Api::<ConfigMap>::namespaced(client.clone(), "mirror");
    eventually_async("the copy exists", async || {
        copies.get_opt("default.app").await.unwrap().is_some()
    })
    .await;
    // The copy's write is waited for in the cache of copies, not in the cache of parents
    // (role=parent, which copies do not carry), which sees no event from now on: were it
    // waited for there, every reconcile of the parent would be held, and the edit below
    // never put back.
    merge(&copies, "default.app", json!({"data": {"k": "tampered"}})).await;
    eventually_async("the copy is put back", async || {
        let copy = copies.get("default.app").await.unwrap();
        copy.data.unwrap_or_default().get("k").map(String::as_str) == Some("v")
    })
    .await;
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn children_in_the_parents_namespace_go_with_it_through_the_garbage_collector() {
    let Started {
        server: _server,
        client,
        parents,
        cancel,
        run,
        ..
    } = started_with_app_token().await;
    // The controller stops: the collector, not the controller, deletes what the owner
    // reference ties to the parent.
    cancel.cancel();
    run.await.unwrap();
    parents
        .delete("app", &DeleteParams::default())
        .await
        .unwrap();
    eventually_async("secret app-token is collected", async || {
        secret(&client, "app-token").await.is_none()
    })
    .await;
}

#[tokio::test]
async fn children_of_a_parent_that_leaves_the_controllers_selector_are_deleted() {
    let Started {
        server: _server,
        client,
        parents,
        cancel,
        run,
        ..
    } = started_with_app_token().await;
    // The parent still exists, but the controller (`role=parent`) no longer sees it: the
    // collector will never delete its child, so the controller does.
    let unlabel = json!({"metadata": {"labels": {"role": null}}});
    parents
        .patch("app", &PatchParams::default(), &Patch::Merge(&unlabel))
        .await
        .unwrap();
    eventually_async("secret app-token is deleted", async || {
        secret(&client, "app-token").await.is_none()
    })
    .await;
    assert!(parents.get_opt("app").await.unwrap().is_some());
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn children_of_a_parent_deleted_with_orphan_propagation_are_kept() {
    let Started {
        server: _server,
        client,
        parents,
        cancel,
        run,
        ..
    } = started_with_app_token().await;
    parents
        .delete("app", &DeleteParams::orphan())
        .await
        .unwrap();
    eventually_async("the parent is gone", async || {
        parents.get_opt("app").await.unwrap().is_none()
    })
    .await;
    eventually_async("the orphan has no owner reference", async || {
        secret(&client, "app-token")
            .await
            .is_some_and(|s| s.metadata.owner_references.unwrap_or_default().is_empty())
    })
    .await;
    // Give the controller time to see the parent's deletion and act on it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        secret(&client, "app-token").await.is_some(),
        "an orphaning deletion keeps the children"
    );
    cancel.cancel();
    run.await.unwrap();
}

/// Keeps the controller's cache of parents (ConfigMaps) behind from now on: its watches end
/// and every watch and list of ConfigMaps fails, until the faults are cleared.
pub(super) fn stall_parent_cache(server: &TestApiServer) -> Faults {
    let faults = server.faults();
    for verb in [Verb::Watch, Verb::List] {
        faults.fail_next(
            RequestMatch::verb(verb).resource("configmaps"),
            usize::MAX,
            FailureCode::InternalError,
        );
    }
    faults.drop_watches();
    faults
}

#[tokio::test]
async fn a_parent_deleted_on_the_server_but_still_cached_gets_no_new_children() {
    // The controller's parent cache stays behind (its watch and lists of ConfigMaps fail)
    // while the parent is deleted and the collector deletes its child. The child's delete
    // event reconciles the parent the cache still holds: creating the child again would
    // start a fight with the collector that lasts as long as the cache is behind.
    let Started {
        server,
        client,
        parents,
        cancel,
        run,
        ..
    } = started_with_app_token().await;
    let faults = stall_parent_cache(&server);
    let parent_reads =
        || faults.request_count(RequestMatch::verb(Verb::Get).resource("configmaps"));
    let reads_before = parent_reads();
    let patches_before = secret_patches(&server);
    parents
        .delete("app", &DeleteParams::default())
        .await
        .unwrap();
    eventually_async("the collector deletes app-token", async || {
        secret(&client, "app-token").await.is_none()
    })
    .await;
    // Time for the child's delete event to reconcile the parent the cache still holds.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        secret_patches(&server),
        patches_before,
        "no child was applied for a parent the server no longer has"
    );
    assert!(secret(&client, "app-token").await.is_none());
    assert!(
        parent_reads() > reads_before,
        "the reconcile read the parent live before creating its child"
    );
    faults.clear();
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn an_orphan_is_not_adopted_again_by_a_parent_the_cache_still_holds() {
    // The parent cache stays behind while the parent is deleted with orphan propagation: the
    // collector unties the child, whose update event reconciles the parent the cache still
    // holds (not being deleted). Tying the child to it again would have the collector
    // delete the child once the parent is gone.
    let Started {
        server,
        client,
        parents,
        cancel,
        run,
        ..
    } = started_with_app_token().await;
    let faults = stall_parent_cache(&server);
    let patches_before = secret_patches(&server);
    parents
        .delete("app", &DeleteParams::orphan())
        .await
        .unwrap();
    eventually_async("the parent is gone", async || {
        parents.get_opt("app").await.unwrap().is_none()
    })
    .await;
    // Time for the orphan's update event to reconcile the parent the cache still holds.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        secret_patches(&server),
        patches_before,
        "the orphan was not tied to the parent again"
    );
    let orphan = secret(&client, "app-token").await;
    assert!(
        orphan.is_some_and(|s| s.metadata.owner_references.unwrap_or_default().is_empty()),
        "the orphan is kept, untied"
    );
    faults.clear();
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_secret_child_given_as_string_data_is_not_applied_again_when_nothing_changed() {
    // The server stores `stringData` as `data`: compared as sent, the child never matched
    // its cached copy and was applied on every reconcile.
    let server = server().await;
    let client = server.client();
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    parents
        .create(
            &PostParams::default(),
            &parent("default", "app", &[("token", "t1")]),
        )
        .await
        .unwrap();
    let factory = InformerFactory::new(client.clone());
    let controller = Controller::<ConfigMap>::builder(&factory)
        .name("string-secrets-of")
        .namespace("default")
        .label_selector("role=parent")
        .children(|cm: &ConfigMap| {
            let mut secret = Secret::default();
            secret.metadata.name = Some(format!("{}-token", cm.name_any()));
            let token = cm.data.as_ref().and_then(|d| d.get("token")).cloned();
            secret.string_data = Some(BTreeMap::from([(
                "value".to_owned(),
                token.unwrap_or_default(),
            )]));
            vec![secret]
        })
        .build_children_only()
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    until_value(&client, "app-token", Some("t1"), "the secret holds t1").await;
    let written = secret_patches(&server);
    for round in 0..3 {
        merge(
            &parents,
            "app",
            json!({"metadata": {"annotations": {"round": round.to_string()}}}),
        )
        .await;
    }
    merge(&parents, "app", json!({"data": {"token": "t2"}})).await;
    until_value(&client, "app-token", Some("t2"), "the secret holds t2").await;
    assert_eq!(
        secret_patches(&server) - written,
        1,
        "one apply, for the change; none for the three touches"
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_declared_status_is_written_when_it_changes_and_only_then() {
    let server = server().await;
    let client = server.client();
    let parents = Api::<Deployment>::namespaced(client.clone(), "default");
    let mut web = Deployment::default();
    web.metadata.name = Some("web".into());
    web.spec = Some(DeploymentSpec {
        replicas: Some(2),
        ..Default::default()
    });
    parents.create(&PostParams::default(), &web).await.unwrap();
    let factory = InformerFactory::new(client.clone());
    let controller = Controller::<Deployment>::builder(&factory)
        .name("status-of")
        .status(|d: &Deployment| DeploymentStatus {
            observed_generation: d.metadata.generation,
            replicas: d.spec.as_ref().and_then(|s| s.replicas),
            ..Default::default()
        })
        .build_children_only()
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    let status = async || parents.get("web").await.unwrap().status.unwrap_or_default();
    eventually_async("the status says generation 1, 2 replicas", async || {
        let s = status().await;
        (s.observed_generation, s.replicas) == (Some(1), Some(2))
    })
    .await;
    merge(&parents, "web", json!({"spec": {"replicas": 3}})).await;
    eventually_async("the status says generation 2, 3 replicas", async || {
        let s = status().await;
        (s.observed_generation, s.replicas) == (Some(2), Some(3))
    })
    .await;
    // A change that leaves the status as it is writes nothing.
    let writes = || {
        server
            .faults()
            .request_count(RequestMatch::verb(Verb::Patch).resource("deployments"))
    };
    let before = writes();
    merge(
        &parents,
        "web",
        json!({"metadata": {"annotations": {"a": "b"}}}),
    )
    .await;
    merge(&parents, "web", json!({"spec": {"replicas": 4}})).await;
    eventually_async("the status says 4 replicas", async || {
        status().await.replicas == Some(4)
    })
    .await;
    assert_eq!(
        writes() - before,
        3,
        "the two patches above, and one status write (for the scale only)"
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_declared_status_computed_from_a_parent_since_replaced_does_not_land_on_its_successor() {
    // The status apply of generation 2's reconcile is held by the server while the
    // Deployment is deleted and made again (generation 1, a new UID). The apply carries the
    // resource version it was computed from: refused, it must not tell the new Deployment
    // that generation 2 was observed.
    let server = server().await;
    let client = server.client();
    let parents = Api::<Deployment>::namespaced(client.clone(), "default");
    let web = |replicas: i32| {
        let mut web = Deployment::default();
        web.metadata.name = Some("web".into());
        web.spec = Some(DeploymentSpec {
            replicas: Some(replicas),
            ..Default::default()
        });
        web
    };
    parents
        .create(&PostParams::default(), &web(2))
        .await
        .unwrap();
    let factory = InformerFactory::new(client.clone());
    let controller = Controller::<Deployment>::builder(&factory)
        .name("status-of")
        .status(|d: &Deployment| DeploymentStatus {
            observed_generation: d.metadata.generation,
            replicas: d.spec.as_ref().and_then(|s| s.replicas),
            ..Default::default()
        })
        .build_children_only()
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    let status = async || parents.get("web").await.unwrap().status.unwrap_or_default();
    eventually_async("the status says generation 1", async || {
        status().await.observed_generation == Some(1)
    })
    .await;
    let status_writes = RequestMatch::verb(Verb::Patch)
        .resource("deployments")
        .subresource("status");
    let written = || server.faults().request_count(status_writes.clone());
    let before = written();
    server
        .faults()
        .stall_next(status_writes.clone(), 1, Duration::from_secs(2));
    merge(&parents, "web", json!({"spec": {"replicas": 3}})).await;
    eventually_async("generation 2's status write is held", async || {
        written() > before
    })
    .await;
    parents
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    let successor = parents
        .create(&PostParams::default(), &web(5))
        .await
        .unwrap();
    // Every version of the successor, from its creation until past the held write's
    // release (a status written wrongly is put right by the next reconcile at once, so
    // only a watch sees it).
    let version = successor.resource_version().unwrap();
    let mut events = parents
        .watch(
            &WatchParams::default().fields("metadata.name=web"),
            &version,
        )
        .await
        .unwrap()
        .boxed();
    let mut observed = Vec::new();
    let until = tokio::time::Instant::now() + Duration::from_secs(3);
    while let Ok(Some(event)) = tokio::time::timeout_at(until, events.next()).await {
        if let Ok(WatchEvent::Modified(d)) = event {
            let s = d.status.unwrap_or_default();
            observed.push((d.metadata.generation, s.observed_generation, s.replicas));
        }
    }
    assert!(
        observed
            .iter()
            .all(|(generation, seen, _)| seen <= generation),
        "the successor was told a generation it never had: {observed:?}"
    );
    assert_eq!(
        observed.last(),
        Some(&(Some(1), Some(1), Some(5))),
        "{observed:?}"
    );
    cancel.cancel();
    run.await.unwrap();
}

/// A controller of Deployments whose declared status reports `replicas` only while the
/// Deployment has the label `report`.
fn run_reporting_controller(client: Client) -> (CancellationToken, JoinHandle<()>) {
    let factory = InformerFactory::new(client);
    let controller = Controller::<Deployment>::builder(&factory)
        .name("reporter")
        .status(|d: &Deployment| DeploymentStatus {
            replicas: d
                .labels()
                .contains_key("report")
                .then(|| d.spec.as_ref().and_then(|s| s.replicas))
                .flatten(),
            ..Default::default()
        })
        .build_children_only()
        .unwrap();
    let cancel = CancellationToken::new();
    (cancel.clone(), tokio::spawn(controller.run(cancel)))
}

#[tokio::test]
async fn a_status_field_the_function_stops_returning_is_removed_also_after_a_restart() {
    let server = server().await;
    let client = server.client();
    let parents = Api::<Deployment>::namespaced(client.clone(), "default");
    let mut web = Deployment::default();
    web.metadata.name = Some("web".into());
    web.metadata.labels = Some(BTreeMap::from([("report".into(), "yes".into())]));
    web.spec = Some(DeploymentSpec {
        replicas: Some(2),
        ..Default::default()
    });
    parents.create(&PostParams::default(), &web).await.unwrap();
    let replicas = async || {
        let web = parents.get("web").await.unwrap();
        web.status.unwrap_or_default().replicas
    };
    let (cancel, run) = run_reporting_controller(client.clone());
    eventually_async("the status reports 2 replicas", async || {
        replicas().await == Some(2)
    })
    .await;
    let unlabel = |labels: serde_json::Value| Patch::Merge(json!({"metadata": {"labels": labels}}));
    parents
        .patch(
            "web",
            &PatchParams::default(),
            &unlabel(json!({"report": null})),
        )
        .await
        .unwrap();
    eventually_async("the replicas are removed from the status", async || {
        replicas().await.is_none()
    })
    .await;
    // Reported again, then the controller stops; the report goes while it is down.
    parents
        .patch(
            "web",
            &PatchParams::default(),
            &unlabel(json!({"report": "yes"})),
        )
        .await
        .unwrap();
    eventually_async("the status reports 2 replicas again", async || {
        replicas().await == Some(2)
    })
    .await;
    cancel.cancel();
    run.await.unwrap();
    parents
        .patch(
            "web",
            &PatchParams::default(),
            &unlabel(json!({"report": null})),
        )
        .await
        .unwrap();
    let (cancel, run) = run_reporting_controller(client.clone());
    eventually_async("a new process removes the replicas", async || {
        replicas().await.is_none()
    })
    .await;
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn the_status_of_a_parent_deleted_since_the_cache_saw_it_is_not_an_error() {
    // The parent cache stays behind while the parent is deleted; reconciles of the parent it
    // still holds each want a new status. The write finds no parent (404): a parent that is
    // gone gets no status, and that is not a failed reconcile.
    let server = server().await;
    let client = server.client();
    let parents = Api::<Deployment>::namespaced(client.clone(), "default");
    let mut web = Deployment::default();
    web.metadata.name = Some("web".into());
    parents.create(&PostParams::default(), &web).await.unwrap();
    let computed = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(0));
    let factory = InformerFactory::new(client.clone());
    let controller = Controller::<Deployment>::builder(&factory)
        .name("status-of-the-gone")
        // The cache is stalled below, maybe before it saw the controller's own last status
        // write: with read-your-own-writes the reconciles would wait for it instead.
        .read_your_writes(false)
        .status({
            // One status until the cache is stalled (the controller settles), then a new
            // one each time, so that every reconcile writes.
            let computed = computed.clone();
            move |_: &Deployment| DeploymentStatus {
                replicas: Some(computed.load(std::sync::atomic::Ordering::Relaxed)),
                ..Default::default()
            }
        })
        .build_children_only()
        .unwrap();
    let probe = controller.probe();
    let queue = controller.queue();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    eventually_async("a status is written", async || {
        parents.get("web").await.unwrap().status.is_some()
    })
    .await;
    eventually("the controller settles", || {
        let stats = probe.sample().stats;
        stats.successes >= 1 && stats.active_workers == 0 && stats.queue_depth == 0
    })
    .await;
    let faults = server.faults();
    for verb in [Verb::Watch, Verb::List] {
        faults.fail_next(
            RequestMatch::verb(verb).resource("deployments"),
            usize::MAX,
            FailureCode::InternalError,
        );
    }
    faults.drop_watches();
    parents
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    let status_writes = || {
        // Only status writes patch Deployments here.
        faults.request_count(RequestMatch::verb(Verb::Patch).resource("deployments"))
    };
    let writes_before = status_writes();
    let key = informer_core::ObjectKey::new(Some("default"), "web");
    for n in 1..=3 {
        computed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        queue.add(key.clone());
        eventually("the cached parent is reconciled", || {
            status_writes() >= writes_before + n
        })
        .await;
    }
    assert_eq!(probe.sample().stats.errors, 0, "no reconcile failed");
    faults.clear();
    cancel.cancel();
    run.await.unwrap();
}

/// Deployment `default/web` created, and every apply of a ConfigMap (its child) refused
/// with a 500 until the faults are cleared.
async fn web_with_children_refused(server: &TestApiServer) -> (Api<Deployment>, Faults) {
    let parents = Api::<Deployment>::namespaced(server.client(), "default");
    let mut web = Deployment::default();
    web.metadata.name = Some("web".into());
    parents.create(&PostParams::default(), &web).await.unwrap();
    let faults = server.faults();
    faults.fail_next(
        RequestMatch::verb(Verb::Patch).resource("configmaps"),
        usize::MAX,
        FailureCode::InternalError,
    );
    (parents, faults)
}

#[tokio::test]
async fn the_status_waits_for_the_children_to_be_in_line() {
    // The status reports on the children: while a child cannot be applied, the reconcile
    // fails and no status is written (it would name a child that is not there).
    let server = server().await;
    let client = server.client();
    let (parents, faults) = web_with_children_refused(&server).await;
    let child_patches =
        || faults.request_count(RequestMatch::verb(Verb::Patch).resource("configmaps"));
    let status_writes =
        || faults.request_count(RequestMatch::verb(Verb::Patch).resource("deployments"));
    let factory = InformerFactory::new(client.clone());
    let controller = Controller::<Deployment>::builder(&factory)
        .name("settings-of")
        .children(|d: &Deployment| {
            let mut settings = ConfigMap::default();
            settings.metadata.name = Some(format!(
                "{}-settings",
                d.metadata.name.as_deref().unwrap_or("")
            ));
            vec![settings]
        })
        .status(|d: &Deployment| DeploymentStatus {
            observed_generation: d.metadata.generation,
            ..Default::default()
        })
        .build_children_only()
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    eventually("the child's apply was tried and failed twice", || {
        child_patches() >= 2
    })
    .await;
    assert_eq!(status_writes(), 0, "no status while the child is missing");
    faults.clear();
    eventually_async(
        "the status is written once the child is there",
        async || {
            let status = parents.get("web").await.unwrap().status.unwrap_or_default();
            status.observed_generation == Some(1)
        },
    )
    .await;
    assert!(
        Api::<ConfigMap>::namespaced(client.clone(), "default")
            .get_opt("web-settings")
            .await
            .unwrap()
            .is_some()
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_field_no_longer_wanted_is_removed_from_its_child() {
    let server = server().await;
    let client = server.client();
    create_namespace(&client, "mirror").await;
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    parents
        .create(
            &PostParams::default(),
            &parent("default", "app", &[("a", "1"), ("b", "2")]),
        )
        .await
        .unwrap();
    let (cancel, run) = run_mirror(client.clone());
    let copies = Api::<ConfigMap>::namespaced(client.clone(), "mirror");
    let keys = async || -> Vec<String> {
        let copy = copies.get_opt("default.app").await.unwrap();
        copy.and_then(|c| c.data)
            .map(|d| d.into_keys().collect())
            .unwrap_or_default()
    };
    eventually_async("the copy holds a and b", async || {
        keys().await == ["a", "b"]
    })
    .await;
    // The copy still holds everything wanted after b goes; the annotation of what was
    // applied tells it apart, and the next apply drops b (the field manager owned it).
    merge(&parents, "app", json!({"data": {"b": null}})).await;
    eventually_async("the copy holds a only", async || keys().await == ["a"]).await;
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn the_reconcile_after_the_children_reads_what_they_did() {
    use informer_runtime::controller::{Action, ChildrenReport, reconciler_fn};
    let server = server().await;
    let client = server.client();
    let (seen, mut reports) = tokio::sync::mpsc::unbounded_channel();
    let factory = InformerFactory::new(client.clone());
    let controller = Controller::<ConfigMap>::builder(&factory)
        .name("secrets-reported")
        .namespace("default")
        .label_selector("role=parent")
        .children(secrets_for)
        .build(reconciler_fn(move |_key, _parent: Option<_>| {
            let seen = seen.clone();
            async move {
                let _ = seen.send(ChildrenReport::current());
                Ok(Action::Done)
            }
        }))
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    parents
        .create(
            &PostParams::default(),
            &parent("default", "app", &[("token", "t1")]),
        )
        .await
        .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(10), reports.recv())
        .await
        .expect("a reconcile")
        .unwrap()
        .expect("a report inside the reconcile");
    let created: Vec<String> = first.created.iter().map(ToString::to_string).collect();
    assert_eq!(created.len(), 1, "{first}");
    assert!(created[0].contains("app-token"), "{first}");
    assert!(
        first.updated.is_empty() && first.deleted.is_empty(),
        "{first}"
    );
    // The report names the child as an Event would: its type and the uid it was written with.
    let child = first.created[0].object_ref();
    let stored = Api::<Secret>::namespaced(client.clone(), "default")
        .get(child.name.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(
        (child.api_version.as_deref(), child.kind.as_deref()),
        (Some("v1"), Some("Secret"))
    );
    assert_eq!(child.uid, stored.metadata.uid);
    assert_eq!(ChildrenReport::current(), None, "outside a reconcile");
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_declared_status_of_a_type_without_a_status_subresource_fails_as_terminal_saying_so() {
    // The API server answers 404 to a status write both for a parent deleted since the cache
    // saw it and for a type without a status subresource (a ConfigMap here; a CRD that does
    // not declare one): the controller tells them apart, and the second is a mistake to fix,
    // not a parent that is gone.
    let server = server().await;
    let client = server.client();
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    parents
        .create(&PostParams::default(), &parent("default", "app", &[]))
        .await
        .unwrap();
    let warnings = Warnings::default();
    let _guard = tracing::subscriber::set_default(warnings.clone());
    let factory = InformerFactory::new(client.clone());
    let controller = Controller::<ConfigMap>::builder(&factory)
        .name("status-nowhere")
        .label_selector("role=parent")
        .status(|_: &ConfigMap| json!({"ready": true}))
        .build_children_only()
        .unwrap();
    let probe = controller.probe();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    eventually("the reconcile failed with a terminal error", || {
        probe.sample().stats.terminal_errors >= 1
    })
    .await;
    let stats = probe.sample().stats;
    assert_eq!(stats.successes, 0, "{stats:?}");
    let logged = warnings.0.lock().unwrap().join("\n");
    assert!(
        logged.contains("default/app has no status subresource")
            && logged.contains("subresources: {status: {}}"),
        "the failure says what to add: {logged}"
    );
    cancel.cancel();
    run.await.unwrap();
}

/// A controller of parent ConfigMaps in `default` whose Secret children are create-only:
/// each holds a "password" made from a counter, different at every call (as a random one
/// would be).
fn run_create_only_controller(client: Client) -> (CancellationToken, JoinHandle<()>) {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let factory = InformerFactory::new(client);
    let controller = Controller::<ConfigMap>::builder(&factory)
        .name("passwords")
        .namespace("default")
        .label_selector("role=parent")
        .children_with(
            move |cm: &ConfigMap| {
                let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut secret = Secret::default();
                secret.metadata.name = Some(format!("{}-password", cm.name_any()));
                secret.string_data = Some(BTreeMap::from([(
                    "password".to_owned(),
                    format!("generated-{n}"),
                )]));
                Some(secret)
            },
            WatchOptions::new().create_only(),
        )
        .build_children_only()
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    (cancel, run)
}

fn password(secret: &Secret) -> String {
    let data = secret.data.as_ref().expect("data");
    String::from_utf8(data["password"].0.clone()).unwrap()
}

#[tokio::test]
async fn a_create_only_child_is_created_once_and_never_changed() {
    let server = server().await;
    let client = server.client();
    let secrets = Api::<Secret>::namespaced(client.clone(), "default");
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    parents
        .create(
            &PostParams::default(),
            &parent("default", "db", &[("a", "1")]),
        )
        .await
        .unwrap();
    let (cancel, run) = run_create_only_controller(client.clone());
    eventually_async("the password Secret is created", async || {
        secrets.get_opt("db-password").await.unwrap().is_some()
    })
    .await;
    let first = secrets.get("db-password").await.unwrap();
    let owners = first.metadata.owner_references.clone().unwrap_or_default();
    assert!(owners.iter().any(|o| o.controller == Some(true)), "owned");
    let generated = password(&first);

    // The parent changes (the function now wants another password): the child stays.
    merge(&parents, "db", json!({"data": {"b": "2"}})).await;
    // Someone edits the child: it is not put back either.
    merge(
        &secrets,
        "db-password",
        json!({"stringData": {"password": "rotated-by-hand"}}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        password(&secrets.get("db-password").await.unwrap()),
        "rotated-by-hand",
        "an existing create-only child is never changed (it was {generated})"
    );

    // Deleted: made again.
    secrets
        .delete("db-password", &DeleteParams::default())
        .await
        .unwrap();
    eventually_async("the password Secret is made again", async || {
        secrets.get_opt("db-password").await.unwrap().is_some()
    })
    .await;
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_create_only_child_the_cache_has_not_seen_is_kept_as_it_is() {
    // The child exists on the server, tied to its parent, but not in the controller's cache
    // (here: it lacks the controller's label; after a restart against a lagging server, the
    // cache is behind): the create answers 409 AlreadyExists, and the existing child is kept,
    // not overwritten.
    let server = server().await;
    let client = server.client();
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let db = parents
        .create(
            &PostParams::default(),
            &parent("default", "db", &[("a", "1")]),
        )
        .await
        .unwrap();
    let secrets = Api::<Secret>::namespaced(client.clone(), "default");
    let mut existing = Secret::default();
    existing.metadata.name = Some("db-password".into());
    existing.metadata.owner_references = Some(vec![controller_ref(&db)]);
    existing.string_data = Some(BTreeMap::from([("password".into(), "kept".into())]));
    secrets
        .create(&PostParams::default(), &existing)
        .await
        .unwrap();
    let faults = server.faults();
    let creates = || faults.request_count(RequestMatch::verb(Verb::Create).resource("secrets"));
    let before = creates();
    let (cancel, run) = run_create_only_controller(client.clone());
    eventually("the controller tried to create the child", || {
        creates() > before
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(password(&secrets.get("db-password").await.unwrap()), "kept");
    cancel.cancel();
    run.await.unwrap();
}

/// A controlling owner reference to `owner`.
fn controller_ref(owner: &ConfigMap) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.name_any(),
        uid: owner.uid().unwrap(),
        controller: Some(true),
        block_owner_deletion: None,
    }
}

/// The reasons and notes of the Events about ConfigMap `name` in `default`.
async fn warnings_about(client: &Client, name: &str) -> Vec<(String, String)> {
    Api::<ApiEvent>::namespaced(client.clone(), "default")
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                && e.type_.as_deref() == Some("Warning")
        })
        .map(|e| (e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
        .collect()
}

/// The first Warning Event about ConfigMap `name`, once there is one.
async fn first_warning_about(client: &Client, name: &str) -> (String, String) {
    eventually_async("a Warning Event on the parent", async || {
        !warnings_about(client, name).await.is_empty()
    })
    .await;
    warnings_about(client, name).await.remove(0)
}

#[tokio::test]
async fn a_child_update_the_server_refuses_is_reported_on_the_parent_as_failed_update() {
    // A field that cannot change (here: the data of a Secret made immutable by hand) makes
    // every apply a 422; retrying cannot help, so the parent's events say why its child no
    // longer follows it, as the workload controllers' FailedCreate does.
    let server = server().await;
    let client = server.client();
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    parents
        .create(
            &PostParams::default(),
            &parent("default", "app", &[("token", "t1")]),
        )
        .await
        .unwrap();
    let (cancel, run) = run_secrets_controller(client.clone());
    eventually_async("the child is made", async || {
        secret(&client, "app-token").await.is_some()
    })
    .await;
    Api::<Secret>::namespaced(client.clone(), "default")
        .patch(
            "app-token",
            &PatchParams::default(),
            &Patch::Merge(json!({"immutable": true})),
        )
        .await
        .unwrap();
    parents
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"token": "t2"}})),
        )
        .await
        .unwrap();
    let warning = first_warning_about(&client, "app").await;
    assert_eq!(warning.0, "FailedUpdate");
    assert!(
        warning.1.contains("Secret default/app-token") && warning.1.contains("immutable"),
        "{}",
        warning.1
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_child_whose_name_is_taken_by_an_object_the_controller_did_not_make_is_left_alone() {
    // As client-go's sample-controller refuses a Deployment its Foo does not control
    // (ErrResourceExists): the object is neither taken over (an apply would force the
    // controller's fields and marks onto it) nor, later, deleted as an unwanted child.
    let server = server().await;
    let client = server.client();
    let secrets = Api::<Secret>::namespaced(client.clone(), "default");
    let mut theirs = Secret::default();
    theirs.metadata.name = Some("app-token".into());
    theirs.string_data = Some(BTreeMap::from([("value".into(), "theirs".into())]));
    let theirs = secrets
        .create(&PostParams::default(), &theirs)
        .await
        .unwrap();
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    parents
        .create(
            &PostParams::default(),
            &parent("default", "app", &[("token", "t1")]),
        )
        .await
        .unwrap();
    let (cancel, run) = run_secrets_controller(client.clone());
    let warning = first_warning_about(&client, "app").await;
    assert_eq!(warning.0, "ErrResourceExists");
    assert!(
        warning
            .1
            .contains("Secret default/app-token exists and was not made by this controller"),
        "{}",
        warning.1
    );
    let now = secret(&client, "app-token").await.unwrap();
    assert_eq!(
        now.resource_version(),
        theirs.resource_version(),
        "not written"
    );
    // The parent stops wanting it: it is still not the controller's to delete.
    parents
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": null})),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        secret(&client, "app-token")
            .await
            .unwrap()
            .resource_version(),
        theirs.resource_version()
    );
    // The name freed, and wanted again: the controller makes its own. (Freed first: a
    // reconcile that still met the object would try again only after TAKEN_RETRY, 15 s,
    // since the object in the way is not the parent's and its deletion queues nothing.)
    secrets
        .delete("app-token", &DeleteParams::default())
        .await
        .unwrap();
    parents
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"token": "t2"}})),
        )
        .await
        .unwrap();
    until_value(
        &client,
        "app-token",
        Some("t2"),
        "the controller's own child is created",
    )
    .await;
    cancel.cancel();
    run.await.unwrap();
}

/// A controller giving each parent ConfigMap a namespace `team-<name>` holding a Secret,
/// the Secret declared first.
fn run_team_controller(client: Client) -> (CancellationToken, JoinHandle<()>) {
    use k8s_openapi::api::core::v1::Namespace;
    let factory = InformerFactory::new(client);
    let controller = Controller::<ConfigMap>::builder(&factory)
        .name("teams")
        .namespace("default")
        .label_selector("role=parent")
        .children_with(
            |cm: &ConfigMap| {
                let mut secret = Secret::default();
                secret.metadata.name = Some("access".into());
                secret.metadata.namespace = Some(format!("team-{}", cm.name_any()));
                Some(secret)
            },
            WatchOptions::new().all_namespaces(),
        )
        .children(|cm: &ConfigMap| {
            let mut namespace = Namespace::default();
            namespace.metadata.name = Some(format!("team-{}", cm.name_any()));
            Some(namespace)
        })
        .build_children_only()
        .unwrap();
    let cancel = CancellationToken::new();
    (cancel.clone(), tokio::spawn(controller.run(cancel)))
}

#[tokio::test]
async fn nothing_is_written_in_a_namespace_child_that_was_refused() {
    // The namespace is someone else's: a Secret written there (an access grant, say) would
    // land in their namespace. The Namespace children go first, and what would be in one not
    // in line waits.
    let server = server().await;
    let client = server.client();
    create_namespace(&client, "team-theirs").await;
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    for name in ["theirs", "ours"] {
        parents
            .create(&PostParams::default(), &parent("default", name, &[]))
            .await
            .unwrap();
    }
    let (cancel, run) = run_team_controller(client.clone());
    let (reason, note) = first_warning_about(&client, "theirs").await;
    assert_eq!(reason, "ErrResourceExists");
    assert!(note.contains("Namespace team-theirs exists"), "{note}");
    let ours = Api::<Secret>::namespaced(client.clone(), "team-ours");
    eventually_async(
        "the other parent's namespace and Secret are made",
        async || ours.get_opt("access").await.unwrap().is_some(),
    )
    .await;
    let theirs = Api::<Secret>::namespaced(client.clone(), "team-theirs");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        theirs.get_opt("access").await.unwrap().is_none(),
        "nothing written in a namespace that is not the parent's"
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_child_an_earlier_controller_of_the_parent_made_is_adopted_in_place() {
    // Made by the operator this controller replaces: controlled by the parent, without the
    // controller's marks. It is applied to (same object, marks added), not refused.
    let server = server().await;
    let client = server.client();
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let app = parents
        .create(
            &PostParams::default(),
            &parent("default", "app", &[("token", "t1")]),
        )
        .await
        .unwrap();
    let secrets = Api::<Secret>::namespaced(client.clone(), "default");
    let mut old = Secret::default();
    old.metadata.name = Some("app-token".into());
    old.metadata.owner_references = Some(vec![controller_ref(&app)]);
    old.string_data = Some(BTreeMap::from([("value".into(), "t0".into())]));
    let old = secrets.create(&PostParams::default(), &old).await.unwrap();
    let (cancel, run) = run_secrets_controller(client.clone());
    until_value(
        &client,
        "app-token",
        Some("t1"),
        "the old child holds the new value",
    )
    .await;
    let adopted = secret(&client, "app-token").await.unwrap();
    assert_eq!(adopted.uid(), old.uid(), "the same object");
    assert_eq!(
        adopted.labels().get(CONTROLLER_LABEL).map(String::as_str),
        Some("secrets-of")
    );
    assert_eq!(adopted.owner_references().len(), 1);
    assert!(warnings_about(&client, "app").await.is_empty());
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn a_child_controlled_by_another_owner_gets_no_second_controller() {
    let server = server().await;
    let client = server.client();
    let parents = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let mut other = ConfigMap::default();
    other.metadata.name = Some("other".into());
    let other = parents
        .create(&PostParams::default(), &other)
        .await
        .unwrap();
    let secrets = Api::<Secret>::namespaced(client.clone(), "default");
    let mut theirs = Secret::default();
    theirs.metadata.name = Some("app-token".into());
    theirs.metadata.owner_references = Some(vec![controller_ref(&other)]);
    let theirs = secrets
        .create(&PostParams::default(), &theirs)
        .await
        .unwrap();
    parents
        .create(
            &PostParams::default(),
            &parent("default", "app", &[("token", "t1")]),
        )
        .await
        .unwrap();
    let (cancel, run) = run_secrets_controller(client.clone());
    let warning = first_warning_about(&client, "app").await;
    assert!(
        warning
            .1
            .contains("is controlled by ConfigMap/other, not by this parent"),
        "{}",
        warning.1
    );
    let now = secret(&client, "app-token").await.unwrap();
    assert_eq!(now.resource_version(), theirs.resource_version());
    assert_eq!(now.owner_references().len(), 1);
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn create_only_on_a_watch_is_a_build_error() {
    let server = server().await;
    let factory = InformerFactory::new(server.client());
    let built = Controller::<ConfigMap>::builder(&factory)
        .owns_with(WatchOptions::<Secret>::new().create_only())
        .build_children_only();
    let error = built.expect_err("refused").to_string();
    assert!(error.contains("children_with"), "{error}");
}

#[tokio::test]
async fn a_failed_child_reaches_the_error_policy_which_records_it_in_the_parents_status() {
    // java-operator-sdk's updateErrorStatus: the children step fails (the API server refuses
    // the child), the reconciler's error policy writes why into the parent's status and
    // chooses the retry.
    use informer_runtime::controller::{Action, KeyReconciler, ReconcileError, reconciler_fn};
    use k8s_openapi::api::apps::v1::DeploymentCondition;
    use std::sync::Arc;

    let server = server().await;
    let client = server.client();
    let (parents, faults) = web_with_children_refused(&server).await;
    let factory = InformerFactory::new(client.clone());
    let builder = Controller::<Deployment>::builder(&factory)
        .name("settings-of")
        .children(|d: &Deployment| {
            let mut settings = ConfigMap::default();
            settings.metadata.name = Some(format!("{}-settings", d.name_any()));
            vec![settings]
        });
    let writer = builder.reconcile_client().unwrap();
    let reconciler = reconciler_fn(|_key, _d: Option<Arc<Deployment>>| async {
        Ok::<_, ReconcileError>(Action::Done)
    })
    .error_policy(move |key, _d: Option<Arc<Deployment>>, error| {
        let condition = DeploymentCondition {
            type_: "ChildrenInLine".into(),
            status: "False".into(),
            reason: Some("ChildFailed".into()),
            message: Some(error.to_string()),
            ..Default::default()
        };
        let api = Api::<Deployment>::namespaced(writer.clone(), key.namespace().unwrap());
        let name = key.name().to_owned();
        tokio::spawn(async move {
            let patch = Patch::Merge(json!({"status": {"conditions": [condition]}}));
            api.patch_status(&name, &PatchParams::default(), &patch)
                .await
                .unwrap();
        });
        Action::requeue_after(Duration::from_millis(200))
    });
    let _: &dyn KeyReconciler<Deployment> = &reconciler;
    let controller = builder.build(reconciler).unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    eventually_async("the failure is in the status", async || {
        let status = parents.get("web").await.unwrap().status.unwrap_or_default();
        status.conditions.unwrap_or_default().iter().any(|c| {
            c.type_ == "ChildrenInLine"
                && c.message.as_deref().is_some_and(|m| {
                    m.contains("ConfigMap default/web-settings") && m.contains("500")
                })
        })
    })
    .await;
    faults.clear();
    eventually_async("the child is applied on a later retry", async || {
        Api::<ConfigMap>::namespaced(client.clone(), "default")
            .get_opt("web-settings")
            .await
            .unwrap()
            .is_some()
    })
    .await;
    cancel.cancel();
    run.await.unwrap();
}
