//! Derived controllers running: against memory sources, inside a manager, and through a
//! real `kube::Client` against the in-process API server (`run_until`).

use std::sync::Arc;
use std::time::Duration;

use informer::prelude::*;
use informer::runtime::controller::ControllerSpec;
use informer_testing::MemoryListerWatcher;
use informer_testing::TestApiServer;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::PostParams;
use kube::{Api, ResourceExt};
use tokio::sync::mpsc;

use crate::servers::next;

/// What a reconcile saw: the key, whether the object was there, and how many ConfigMaps
/// and Secrets its context's listers held.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    key: String,
    present: bool,
    secrets_in_cache: usize,
}

/// Sends what a reconcile of `key` saw (the test may have stopped listening).
fn report(
    seen: &mpsc::UnboundedSender<Seen>,
    key: &ObjectKey,
    secret: &Option<Arc<Secret>>,
    secrets_in_cache: usize,
) {
    let _ = seen.send(Seen {
        key: key.to_string(),
        present: secret.is_some(),
        secrets_in_cache,
    });
}

/// Secrets own ConfigMaps; the controller reports what it sees.
#[derive(ControllerSpec)]
#[controller(for = Secret, owns(ConfigMap), workers = 2)]
struct SecretReporter {
    seen: mpsc::UnboundedSender<Seen>,
}

impl Reconcile for SecretReporter {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        secret: Option<Arc<Secret>>,
    ) -> Result<Action, ReconcileError> {
        report(&self.seen, key, &secret, ctx.secrets().len());
        let _ = ctx.config_maps().len();
        Ok(Action::Done)
    }
}

fn secret(name: &str) -> Secret {
    let mut s = Secret::default();
    s.metadata.name = Some(name.into());
    s.metadata.namespace = Some("default".into());
    s
}

fn owned_config_map(name: &str, owner: &Secret) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.namespace = Some("default".into());
    cm.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Secret".into(),
        name: owner.name_any(),
        uid: owner.uid().unwrap_or_default(),
        controller: Some(true),
        ..Default::default()
    }]);
    cm
}

#[tokio::test]
async fn a_derived_controller_reconciles_with_its_context_over_memory_sources() {
    let secrets = MemoryListerWatcher::<Secret>::new();
    let s = secret("db");
    secrets.create(s.clone());
    let factory = InformerFactory::without_client();
    let source = secrets.clone();
    let _secrets = factory.informer_from(InformerParams::all(), move || Arc::new(source));
    let config_maps = MemoryListerWatcher::<ConfigMap>::new();
    let source = config_maps.clone();
    let _cms = factory.informer_from(InformerParams::all(), move || Arc::new(source));

    let (tx, mut rx) = mpsc::unbounded_channel();
    let controller = SecretReporter { seen: tx }
        .into_controller(&factory)
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));

    let first = next(&mut rx, "the initial reconcile").await;
    assert_eq!(
        first,
        Seen {
            key: "default/db".into(),
            present: true,
            secrets_in_cache: 1
        }
    );

    // An owned ConfigMap changing reconciles its owner.
    let stored = secrets.get(&ObjectKey::new(Some("default"), "db")).unwrap();
    config_maps.create(owned_config_map("db-settings", &stored));
    assert_eq!(
        next(&mut rx, "the owner's reconcile").await.key,
        "default/db"
    );

    // A deleted Secret is reconciled once more, absent.
    secrets.delete(&ObjectKey::new(Some("default"), "db"));
    let gone = next(&mut rx, "the reconcile of the deletion").await;
    assert!(!gone.present);
    assert_eq!(gone.secrets_in_cache, 0);

    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn add_to_runs_a_derived_controller_in_a_manager() {
    let secrets = MemoryListerWatcher::<Secret>::new();
    secrets.create(secret("api-token"));
    let mut manager = Manager::with_factory(InformerFactory::without_client())
        .without_http()
        .handle_signals(false);
    let source = secrets.clone();
    let _secrets = manager
        .factory()
        .informer_from(InformerParams::all(), move || Arc::new(source));
    let _cms = manager.factory().informer_from(InformerParams::all(), || {
        Arc::new(MemoryListerWatcher::<ConfigMap>::new())
    });
    let (tx, mut rx) = mpsc::unbounded_channel();
    // The controller's listers, for code beside it: the caches its context reads.
    let listers = SecretReporter { seen: tx.clone() }
        .add_to(&mut manager)
        .unwrap();
    assert!(
        SecretReporter { seen: tx }.add_to(&mut manager).is_err(),
        "a second controller with the same name is refused"
    );
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let cancel = cancel.clone();
        async move { manager.run(cancel).await }
    });
    assert_eq!(next(&mut rx, "a reconcile").await.key, "default/api-token");
    assert!(
        listers
            .secrets()
            .namespaced("default")
            .get("api-token")
            .is_some(),
        "the listers add_to returned read the controller's cache"
    );
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn run_until_drives_a_derived_controller_through_a_real_client() {
    let server = TestApiServer::start().await.unwrap();
    let client = server.client();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(SecretReporter { seen: tx }.run_until(client.clone(), cancel.clone()));

    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let created = secrets
        .create(&PostParams::default(), &secret("tls"))
        .await
        .unwrap();
    let seen = next(&mut rx, "the reconcile of the new Secret").await;
    assert_eq!(seen.key, "default/tls");
    assert!(seen.present);

    let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
    config_maps
        .create(
            &PostParams::default(),
            &owned_config_map("tls-settings", &created),
        )
        .await
        .unwrap();
    assert_eq!(
        next(&mut rx, "the owner's reconcile").await.key,
        "default/tls"
    );

    cancel.cancel();
    run.await.unwrap().unwrap();
}

/// The Secret a ConfigMap names in its `secret` entry.
fn named_secret(cm: &ConfigMap) -> Option<ObjectKey> {
    let name = cm.data.as_ref()?.get("secret")?;
    Some(ObjectKey::new(cm.metadata.namespace.as_deref(), name))
}

/// One kind owned and watched through a mapper in the same place: one informer, two handlers.
#[derive(ControllerSpec)]
#[controller(
    for = Secret,
    owns(ConfigMap),
    watches(ConfigMap, mapper = named_secret, lister = sources)
)]
struct OwnsAndWatches {
    seen: mpsc::UnboundedSender<Seen>,
}

impl Reconcile for OwnsAndWatches {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        secret: Option<Arc<Secret>>,
    ) -> Result<Action, ReconcileError> {
        assert_eq!(ctx.config_maps().len(), ctx.sources().len(), "one cache");
        report(&self.seen, key, &secret, ctx.secrets().len());
        Ok(Action::Done)
    }
}

#[tokio::test]
async fn one_kind_owned_and_watched_through_a_mapper_reconciles_for_both() {
    let server = TestApiServer::start().await.unwrap();
    let client = server.client();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(OwnsAndWatches { seen: tx }.run_until(client.clone(), cancel.clone()));
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let owner = secrets
        .create(&PostParams::default(), &secret("owner"))
        .await
        .unwrap();
    secrets
        .create(&PostParams::default(), &secret("named"))
        .await
        .unwrap();
    let mut keys = vec![
        next(&mut rx, "a new Secret's reconcile").await.key,
        next(&mut rx, "a new Secret's reconcile").await.key,
    ];
    keys.sort();
    assert_eq!(keys, ["default/named", "default/owner"]);

    let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
    // Owned: its owner is reconciled.
    config_maps
        .create(&PostParams::default(), &owned_config_map("child", &owner))
        .await
        .unwrap();
    assert_eq!(
        next(&mut rx, "the owner's reconcile").await.key,
        "default/owner"
    );
    // Naming a Secret: the mapper's key is reconciled.
    let mut source = ConfigMap::default();
    source.metadata.name = Some("source".into());
    source.data = Some([("secret".to_owned(), "named".to_owned())].into());
    config_maps
        .create(&PostParams::default(), &source)
        .await
        .unwrap();
    assert_eq!(
        next(&mut rx, "the mapped reconcile").await.key,
        "default/named"
    );

    cancel.cancel();
    run.await.unwrap().unwrap();
}

/// Secrets by the ConfigMap (`namespace/name`) their `config` annotation names.
#[indexer(Secret)]
fn secrets_by_config(secret: &Secret) -> Option<String> {
    let config = secret.metadata.annotations.as_ref()?.get("config")?;
    Some(format!(
        "{}/{config}",
        secret.metadata.namespace.as_deref()?
    ))
}

/// The Secrets that name a changed ConfigMap, read from the controller's index.
fn secrets_using(cm: &ConfigMap, ctx: &Context<ConfigUsers>) -> Vec<ObjectKey> {
    let config = format!("{}/{}", cm.namespace().unwrap_or_default(), cm.name_any());
    ctx.lister().index_keys::<SecretsByConfig>(&config)
}

/// A mapper that reads the controller's own index through its context.
#[derive(ControllerSpec)]
#[controller(
    for = Secret,
    index = [SecretsByConfig],
    watches(ConfigMap, mapper = secrets_using)
)]
struct ConfigUsers {
    seen: mpsc::UnboundedSender<Seen>,
}

impl Reconcile for ConfigUsers {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        secret: Option<Arc<Secret>>,
    ) -> Result<Action, ReconcileError> {
        report(&self.seen, key, &secret, ctx.secrets().len());
        Ok(Action::Done)
    }
}

#[tokio::test]
async fn a_mapper_reads_the_controllers_index_through_its_context() {
    let server = TestApiServer::start().await.unwrap();
    let client = server.client();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(ConfigUsers { seen: tx }.run_until(client.clone(), cancel.clone()));
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    for (name, config) in [("a", "shared"), ("b", "shared"), ("c", "other")] {
        let mut s = secret(name);
        s.metadata.annotations = Some([("config".to_owned(), config.to_owned())].into());
        secrets.create(&PostParams::default(), &s).await.unwrap();
    }
    for _ in 0..3 {
        next(&mut rx, "a new Secret's reconcile").await;
    }
    let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut shared = ConfigMap::default();
    shared.metadata.name = Some("shared".into());
    config_maps
        .create(&PostParams::default(), &shared)
        .await
        .unwrap();
    let mut keys = vec![
        next(&mut rx, "a Secret using it").await.key,
        next(&mut rx, "a Secret using it").await.key,
    ];
    keys.sort();
    assert_eq!(keys, ["default/a", "default/b"]);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), rx.recv())
            .await
            .is_err(),
        "the Secret naming another ConfigMap is not reconciled"
    );
    cancel.cancel();
    run.await.unwrap().unwrap();
}

/// A controller that reads managed fields.
#[derive(ControllerSpec)]
#[controller(for = ConfigMap, keep_managed_fields)]
struct FieldOwners;

impl Reconcile for FieldOwners {
    async fn reconcile(
        &self,
        _ctx: &Context<Self>,
        _key: &ObjectKey,
        _cm: Option<Arc<ConfigMap>>,
    ) -> Result<Action, ReconcileError> {
        Ok(Action::Done)
    }
}

#[tokio::test]
async fn a_manager_caches_as_run_does_and_refuses_a_controller_its_factory_would_starve() {
    let server = TestApiServer::start().await.unwrap();
    let mut manager = informer::runtime::Manager::new(server.client());
    assert_eq!(
        manager.factory().cache(),
        informer::runtime::factory::CachePolicy::COMPACT
    );
    assert!(manager.factory().drops_managed_fields());
    let err = FieldOwners.add_to(&mut manager).unwrap_err();
    assert!(
        matches!(
            &err,
            informer::runtime::manager::ManagerError::ManagedFieldsDropped(name) if name == "FieldOwners"
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("drop_managed_fields(false)"),
        "{err}"
    );
    // With a factory that keeps them, it is added.
    let factory = informer::runtime::InformerFactory::new(server.client());
    let mut manager = informer::runtime::Manager::with_factory(factory).client(server.client());
    FieldOwners.add_to(&mut manager).unwrap();
}

/// Copies each labelled ConfigMap into a ConfigMap named after it with the controller's
/// own suffix: its children function reads the controller's struct through the context.
#[derive(ControllerSpec)]
#[controller(
    for = ConfigMap,
    labels = "copy=yes",
    children(ConfigMap, from = suffixed_copy, lister = copies)
)]
struct SuffixedCopies {
    suffix: String,
}

impl Reconcile for SuffixedCopies {}

fn suffixed_copy(cm: &ConfigMap, ctx: &Context<SuffixedCopies>) -> Option<ConfigMap> {
    let suffix = &ctx.spec()?.suffix;
    let mut copy = ConfigMap::default();
    copy.metadata.name = Some(format!("{}-{suffix}", cm.name_any()));
    copy.data = cm.data.clone();
    Some(copy)
}

#[tokio::test]
async fn functions_given_the_context_read_the_controllers_own_fields() {
    let server = TestApiServer::start().await.unwrap();
    let client = server.client();
    let cancel = CancellationToken::new();
    let copies = SuffixedCopies {
        suffix: "v2".into(),
    };
    let run = tokio::spawn(copies.run_until(client.clone(), cancel.clone()));
    let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut source = ConfigMap::default();
    source.metadata.name = Some("settings".into());
    source.metadata.labels = Some([("copy".to_owned(), "yes".to_owned())].into());
    config_maps
        .create(&PostParams::default(), &source)
        .await
        .unwrap();
    informer_testing::eventually("the copy named with the controller's suffix", async || {
        config_maps.get_opt("settings-v2").await.unwrap().is_some()
    })
    .await;
    cancel.cancel();
    run.await.unwrap().unwrap();
}

/// A controller of the namespace it is given when made (as an operator reads
/// `POD_NAMESPACE`), watching Secrets of a namespace a function names.
#[derive(ControllerSpec)]
#[controller(for = ConfigMap, namespace = own_namespace)]
#[controller(watches(Secret, namespace = vault, mapper = config_of_secret))]
struct InOwnNamespace {
    namespace: String,
    seen: mpsc::UnboundedSender<String>,
}

fn own_namespace(controller: &InOwnNamespace) -> String {
    controller.namespace.clone()
}

fn vault() -> &'static str {
    "vault"
}

/// A Secret of the vault names the ConfigMap of the controller's namespace it is for.
fn config_of_secret(secret: &Secret) -> Option<ObjectKey> {
    Some(ObjectKey::new(Some("team-a"), &secret.name_any()))
}

impl Reconcile for InOwnNamespace {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        _cm: Option<Arc<ConfigMap>>,
    ) -> Result<Action, ReconcileError> {
        // Only the controller's namespace is cached.
        assert!(
            ctx.config_maps()
                .list()
                .iter()
                .all(|cm| cm.namespace().as_deref() == Some(self.namespace.as_str()))
        );
        let _ = self.seen.send(key.to_string());
        Ok(Action::Done)
    }
}

#[tokio::test]
async fn a_namespace_named_by_a_function_is_the_one_watched() {
    let server = TestApiServer::start().await.unwrap();
    let client = server.client();
    for namespace in ["team-a", "team-b", "vault"] {
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        let mut ns = k8s_openapi::api::core::v1::Namespace::default();
        ns.metadata.name = Some(namespace.into());
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
    }
    let config_map = |name: &str| {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        cm
    };
    for (namespace, name) in [("team-b", "elsewhere"), ("team-a", "mine")] {
        Api::<ConfigMap>::namespaced(client.clone(), namespace)
            .create(&PostParams::default(), &config_map(name))
            .await
            .unwrap();
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let controller = InOwnNamespace {
        namespace: "team-a".into(),
        seen: tx,
    };
    let run = tokio::spawn(controller.run_until(client.clone(), cancel.clone()));
    assert_eq!(
        next(&mut rx, "the reconcile of team-a's ConfigMap").await,
        "team-a/mine"
    );
    let mut in_vault = secret("mine");
    in_vault.metadata.namespace = Some("vault".into());
    Api::<Secret>::namespaced(client.clone(), "vault")
        .create(&PostParams::default(), &in_vault)
        .await
        .unwrap();
    assert_eq!(
        next(&mut rx, "the reconcile the vault's Secret maps to").await,
        "team-a/mine"
    );
    cancel.cancel();
    run.await.unwrap().unwrap();
    assert!(
        rx.try_recv().is_err(),
        "team-b's ConfigMap was never reconciled"
    );
}

/// A ConfigMap child per Secret, for Secrets that say which team they are for.
#[derive(ControllerSpec)]
#[controller(for = Secret, namespace = "default", validate = has_team)]
#[controller(children(ConfigMap, from = summary))]
struct Summaries {
    refused: mpsc::UnboundedSender<String>,
}

fn has_team(secret: &Secret, ctx: &Context<Summaries>) -> Result<(), ReconcileError> {
    let _ = ctx.secrets(); // the context form, with the listers at hand
    match secret.labels().get("team") {
        Some(_) => Ok(()),
        None => Err(ReconcileError::terminal("label the Secret with its team")),
    }
}

fn summary(secret: &Secret) -> Option<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(format!("{}-summary", secret.name_any()));
    Some(cm)
}

impl Reconcile for Summaries {
    async fn reconcile(
        &self,
        _ctx: &Context<Self>,
        _key: &ObjectKey,
        _secret: Option<Arc<Secret>>,
    ) -> Result<Action, ReconcileError> {
        Ok(Action::Done)
    }

    async fn on_error(
        &self,
        _ctx: &Context<Self>,
        key: &ObjectKey,
        _secret: Option<Arc<Secret>>,
        error: &ReconcileError,
    ) -> Action {
        let _ = self.refused.send(format!("{key}: {error}"));
        error.default_action()
    }
}

#[tokio::test]
async fn a_spec_refused_by_validate_gets_no_child_until_it_is_fixed() {
    let server = TestApiServer::start().await.unwrap();
    let client = server.client();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(Summaries { refused: tx }.run_until(client.clone(), cancel.clone()));
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    secrets
        .create(&PostParams::default(), &secret("anonymous"))
        .await
        .unwrap();
    assert_eq!(
        next(&mut rx, "the refusal").await,
        "default/anonymous: label the Secret with its team"
    );
    let mut labelled = secret("team-a");
    labelled
        .metadata
        .labels
        .get_or_insert_default()
        .insert("team".into(), "a".into());
    secrets
        .create(&PostParams::default(), &labelled)
        .await
        .unwrap();
    crate::servers::until("team-a's summary", async || {
        config_maps
            .get_opt("team-a-summary")
            .await
            .unwrap()
            .is_some()
    })
    .await;
    assert!(
        config_maps
            .get_opt("anonymous-summary")
            .await
            .unwrap()
            .is_none(),
        "no child for the refused Secret"
    );
    assert!(rx.try_recv().is_err(), "a terminal refusal is not retried");
    // Fixed: its child comes.
    let patch = serde_json::json!({"metadata": {"labels": {"team": "b"}}});
    secrets
        .patch(
            "anonymous",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    crate::servers::until("anonymous's summary once fixed", async || {
        config_maps
            .get_opt("anonymous-summary")
            .await
            .unwrap()
            .is_some()
    })
    .await;
    cancel.cancel();
    run.await.unwrap().unwrap();
}

/// An outside copy of each ConfigMap, behind the controller's finalizer.
#[derive(ControllerSpec)]
#[controller(for = ConfigMap, namespace = "default", finalizer = "example.com/outside-copy")]
struct OutsideCopies {
    outside: Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
    cleaned: mpsc::UnboundedSender<String>,
}

impl Reconcile for OutsideCopies {
    async fn reconcile(
        &self,
        _ctx: &Context<Self>,
        key: &ObjectKey,
        cm: Option<Arc<ConfigMap>>,
    ) -> Result<Action, ReconcileError> {
        if let Some(cm) = cm {
            assert!(
                cm.metadata.deletion_timestamp.is_none(),
                "cleanup runs instead"
            );
            assert_eq!(cm.finalizers(), ["example.com/outside-copy"]);
            self.outside.lock().unwrap().insert(key.to_string());
        }
        Ok(Action::Done)
    }

    async fn cleanup(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        cm: Arc<ConfigMap>,
    ) -> Result<Action, ReconcileError> {
        assert!(cm.metadata.deletion_timestamp.is_some());
        let _ = ctx.config_maps(); // the context, as in reconcile
        self.outside.lock().unwrap().remove(&key.to_string());
        let _ = self.cleaned.send(key.to_string());
        Ok(Action::Done)
    }
}

#[tokio::test]
async fn a_derived_finalizer_is_added_and_removed_once_its_cleanup_ran() {
    let server = TestApiServer::start().await.unwrap();
    let client = server.client();
    let outside = Arc::default();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let controller = OutsideCopies {
        outside: Arc::clone(&outside),
        cleaned: tx,
    };
    let run = tokio::spawn(controller.run_until(client.clone(), cancel.clone()));
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("app".into());
    config_maps
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    crate::servers::until("the outside copy", async || {
        outside.lock().unwrap().contains("default/app")
    })
    .await;
    assert_eq!(
        config_maps.get("app").await.unwrap().finalizers(),
        ["example.com/outside-copy"]
    );
    config_maps
        .delete("app", &Default::default())
        .await
        .unwrap();
    assert_eq!(next(&mut rx, "the cleanup").await, "default/app");
    crate::servers::until("the ConfigMap goes", async || {
        config_maps.get_opt("app").await.unwrap().is_none()
    })
    .await;
    assert!(outside.lock().unwrap().is_empty());
    cancel.cancel();
    run.await.unwrap().unwrap();
}
