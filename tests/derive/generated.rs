//! What the derive generates, checked without a server: builder settings, context
//! accessors, typed indexes.

use std::sync::Arc;

use informer::prelude::*;
use informer::runtime::controller::ControllerSpec;
use informer_testing::MemoryListerWatcher;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// ReplicaSets by the UID of their controlling owner.
#[indexer(ReplicaSet)]
fn replica_sets_by_owner(rs: &ReplicaSet) -> Option<String> {
    let refs = rs.metadata.owner_references.as_ref()?;
    refs.iter()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.clone())
}

/// Pods by node.
#[indexer(Pod, name = PodsOnNode)]
fn pods_by_node(pod: &Pod) -> Vec<String> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .into_iter()
        .collect()
}

/// Deployments named in a ConfigMap's `deployments` entry.
fn deployments_named_in(cm: &ConfigMap) -> Vec<ObjectKey> {
    let ns = cm.metadata.namespace.as_deref();
    cm.data
        .as_ref()
        .and_then(|d| d.get("deployments"))
        .map_or(Vec::new(), |names| {
            names
                .split(',')
                .map(|n| ObjectKey::new(ns, n.trim()))
                .collect()
        })
}

#[derive(ControllerSpec)]
#[controller(
    for = Deployment,
    owns(ReplicaSet, index = [ReplicaSetsByOwner]),
    watches(ConfigMap, mapper = deployments_named_in),
    watches(Pod, mapper = |_: &Pod| Vec::new(), lister = all_pods, index = [PodsOnNode]),
    workers = 3,
    resync = "1h",
    timeout = "30s",
    queue = "priority",
    name = "deployments"
)]
struct Deployments;

impl Reconcile for Deployments {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        _key: &ObjectKey,
        deployment: Option<Arc<Deployment>>,
    ) -> Result<Action, ReconcileError> {
        let Some(d) = deployment else {
            return Ok(Action::Done);
        };
        let uid = d.metadata.uid.as_deref().unwrap_or_default();
        let _owned: Vec<Arc<ReplicaSet>> = ctx.replica_sets().by_index::<ReplicaSetsByOwner>(uid);
        let _cms: Vec<Arc<ConfigMap>> = ctx.config_maps().list();
        let _pods: Vec<Arc<Pod>> = ctx.all_pods().by_index::<PodsOnNode>("node-1");
        let _all: Vec<Arc<Deployment>> = ctx.deployments().list();
        Ok(Action::Done)
    }
}

/// A factory without a client whose informers list and watch memory; the handles keep
/// the informers registered (the factory forgets an informer when its last handle goes).
struct Sources {
    factory: InformerFactory,
    _handles: Vec<Box<dyn std::any::Any>>,
}

fn sources() -> Sources {
    fn register<K>(factory: &InformerFactory) -> Box<dyn std::any::Any>
    where
        K: kube::Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
    {
        Box::new(factory.informer_from(InformerParams::all(), || {
            Arc::new(MemoryListerWatcher::<K>::new())
        }))
    }
    let factory = InformerFactory::without_client();
    let handles = vec![
        register::<Deployment>(&factory),
        register::<ReplicaSet>(&factory),
        register::<ConfigMap>(&factory),
        register::<Pod>(&factory),
    ];
    Sources {
        factory,
        _handles: handles,
    }
}

#[test]
fn attributes_become_builder_settings() {
    let sources = sources();
    let factory = &sources.factory;
    let controller = Deployments.into_controller(factory).unwrap();
    assert_eq!(controller.name(), "deployments");
    let debug = format!("{controller:?}");
    assert!(debug.contains("workers: 3"), "{debug}");
    assert_eq!(factory.informers().len(), 4, "one informer per resource");
    assert!(controller.lister_of::<ReplicaSet>().is_some());
    assert!(controller.lister_of::<ConfigMap>().is_some());
    assert!(controller.lister_of::<Pod>().is_some());
}

#[test]
fn read_your_writes_is_on_unless_the_attribute_turns_it_off() {
    #[derive(ControllerSpec)]
    #[controller(for = ConfigMap, read_your_writes = false)]
    struct Reporter;
    impl Reconcile for Reporter {
        async fn reconcile(
            &self,
            _ctx: &Context<Self>,
            _key: &ObjectKey,
            _cm: Option<Arc<ConfigMap>>,
        ) -> Result<Action, ReconcileError> {
            Ok(Action::Done)
        }
    }
    let sources = sources();
    let on = format!(
        "{:?}",
        Deployments.into_controller(&sources.factory).unwrap()
    );
    assert!(on.contains("read_your_writes: true"), "{on}");
    let off = format!("{:?}", Reporter.into_controller(&sources.factory).unwrap());
    assert!(off.contains("read_your_writes: false"), "{off}");
}

#[test]
fn listed_indexes_are_registered_when_the_controller_is_built() {
    let sources = sources();
    let factory = &sources.factory;
    let controller = Deployments.into_controller(factory).unwrap();
    let rs = controller.lister_of::<ReplicaSet>().unwrap();
    assert!(
        rs.indexer()
            .index_names()
            .iter()
            .any(|n| n == ReplicaSetsByOwner::NAME)
    );
    let pods = controller.lister_of::<Pod>().unwrap();
    assert!(
        pods.indexer()
            .index_names()
            .iter()
            .any(|n| n == PodsOnNode::NAME)
    );
}

#[test]
fn index_names_are_qualified_by_module_path() {
    assert!(ReplicaSetsByOwner::NAME.ends_with("generated::replica_sets_by_owner"));
    assert!(PodsOnNode::NAME.ends_with("::pods_by_node"));
}

#[test]
fn indexer_functions_stay_callable_and_index_by_their_values() {
    let mut rs = ReplicaSet::default();
    rs.metadata.owner_references = Some(vec![OwnerReference {
        uid: "u-1".into(),
        controller: Some(true),
        ..Default::default()
    }]);
    assert_eq!(replica_sets_by_owner(&rs).as_deref(), Some("u-1"));
    assert_eq!(ReplicaSetsByOwner::values(&rs), ["u-1"]);
    assert!(PodsOnNode::values(&Pod::default()).is_empty());
}

#[test]
fn two_controllers_may_list_the_same_index_on_a_shared_cache() {
    #[derive(ControllerSpec)]
    #[controller(for = ReplicaSet, owns(Pod, index = [PodsOnNode]))]
    struct A;
    impl Reconcile for A {
        async fn reconcile(
            &self,
            _: &Context<Self>,
            _: &ObjectKey,
            _: Option<Arc<ReplicaSet>>,
        ) -> Result<Action, ReconcileError> {
            Ok(Action::Done)
        }
    }
    let sources = sources();
    let factory = &sources.factory;
    let _first = Deployments.into_controller(factory).unwrap();
    let second = A.into_controller(factory).unwrap();
    assert_eq!(second.name(), "a");
}

#[test]
fn the_context_reads_the_caches() {
    let sources = sources();
    let factory = &sources.factory;
    let controller = Deployments.into_controller(factory).unwrap();
    let ctx = Context::<Deployments>::new(&controller);
    assert_eq!(ctx.name(), "deployments");
    assert!(ctx.deployments().is_empty());
    assert!(ctx.replica_sets().is_empty());
    assert!(ctx.all_pods().by_index::<PodsOnNode>("n").is_empty());
    ctx.queue().add(ObjectKey::new(Some("default"), "web"));
    assert_eq!(controller.stats().queue_depth, 1);
}
