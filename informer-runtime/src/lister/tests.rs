use std::sync::Arc;

use informer_core::store::{ReplaceDiff, StoreOp, ThreadSafeStore, index_fn};
use informer_core::{IndexError, Indexer, Indexers, KeyError, ObjectKey, Store, StoreError};
use k8s_openapi::api::core::v1::Pod;

use super::*;

fn pod(ns: Option<&str>, name: &str, labels: &[(&str, &str)], node: &str) -> Arc<Pod> {
    let mut p = Pod::default();
    p.metadata.name = Some(name.into());
    p.metadata.namespace = ns.map(Into::into);
    if !labels.is_empty() {
        p.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
    }
    p.spec = Some(k8s_openapi::api::core::v1::PodSpec {
        node_name: Some(node.into()),
        ..Default::default()
    });
    Arc::new(p)
}

fn names(objs: &[Arc<Pod>]) -> Vec<String> {
    let mut v: Vec<String> = objs
        .iter()
        .map(|p| {
            format!(
                "{}/{}",
                p.metadata.namespace.as_deref().unwrap_or(""),
                p.metadata.name.as_deref().unwrap_or("")
            )
        })
        .collect();
    v.sort();
    v
}

fn fixture() -> (Arc<ThreadSafeStore<Pod>>, Lister<Pod>) {
    let store = Arc::new(ThreadSafeStore::<Pod>::new());
    let node_index: Indexers<Pod> = [(
        "node".to_owned(),
        index_fn(|p: &Pod| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .into_iter()
                .collect()
        }),
    )]
    .into();
    store.add_indexers(node_index).unwrap();
    for p in [
        pod(
            Some("a"),
            "web-0",
            &[("app", "web"), ("tier", "front")],
            "n1",
        ),
        pod(Some("a"), "db-0", &[("app", "db")], "n2"),
        pod(Some("b"), "web-0", &[("app", "web")], "n1"),
        pod(Some("b"), "bare", &[], "n2"),
    ] {
        store.add(p).unwrap();
    }
    let lister = Lister::new(store.clone() as Arc<dyn Indexer<Pod>>);
    (store, lister)
}

#[test]
fn get_returns_the_cached_object_without_copying() {
    let (store, lister) = fixture();
    let key = ObjectKey::new(Some("a"), "web-0");
    let cached = store.get(&key).unwrap();
    assert!(Arc::ptr_eq(&lister.get(&key).unwrap(), &cached));
}

#[test]
fn missing_object_is_none() {
    let (_, lister) = fixture();
    assert!(lister.get(&ObjectKey::new(Some("a"), "nope")).is_none());
    assert!(lister.get(&ObjectKey::cluster("web-0")).is_none());
    assert!(lister.namespaced("zzz").get("web-0").is_none());
    assert!(lister.namespaced("a").get("").is_none());
    assert!(lister.namespaced("zzz").list().is_empty());
}

#[test]
fn list_returns_every_cached_object() {
    let (_, lister) = fixture();
    assert_eq!(
        names(&lister.list()),
        ["a/db-0", "a/web-0", "b/bare", "b/web-0"]
    );
    assert_eq!(lister.len(), 4);
    assert!(!lister.is_empty());
}

#[test]
fn list_matching_filters_by_labels_and_unlabelled_objects_have_no_labels() {
    let (_, lister) = fixture();
    assert_eq!(
        names(&lister.list_by_labels("app=web").unwrap()),
        ["a/web-0", "b/web-0"]
    );
    assert_eq!(
        names(&lister.list_by_labels("app notin (web)").unwrap()),
        ["a/db-0", "b/bare"]
    );
    assert_eq!(names(&lister.list_by_labels("!app").unwrap()), ["b/bare"]);
    assert_eq!(lister.list_by_labels("").unwrap().len(), 4);
    let selector = parse_label_selector("app=web,tier=front").unwrap();
    assert_eq!(names(&lister.list_matching(&selector)), ["a/web-0"]);
}

#[test]
fn malformed_label_selector_is_an_error_not_an_empty_list() {
    let (_, lister) = fixture();
    assert!(lister.list_by_labels("app in (web").is_err());
    assert!(lister.namespaced("a").list_by_labels("app in web").is_err());
}

#[test]
fn namespaced_lister_sees_only_its_namespace() {
    let (_, lister) = fixture();
    let a = lister.namespaced("a");
    assert_eq!(names(&a.list()), ["a/db-0", "a/web-0"]);
    assert_eq!(
        a.get("web-0").unwrap().metadata.namespace.as_deref(),
        Some("a")
    );
    assert_eq!(names(&a.list_by_labels("app=web").unwrap()), ["a/web-0"]);
    assert_eq!(names(&lister.namespaced("b").list()), ["b/bare", "b/web-0"]);
}

#[test]
fn namespaced_lister_of_empty_namespace_lists_every_namespace() {
    // client-go's `Pods(metav1.NamespaceAll).List` (`ListAllByNamespace`) and
    // controller-runtime's `InNamespace("")`.
    let (store, lister) = fixture();
    store.add(pod(None, "global", &[], "n1")).unwrap();
    assert_eq!(names(&lister.namespaced("").list()), names(&lister.list()));
    assert_eq!(lister.namespaced("").list().len(), 5);
    assert_eq!(
        names(&lister.namespaced("").list_by_labels("app=web").unwrap()),
        ["a/web-0", "b/web-0"]
    );
}

#[test]
fn namespaced_lister_of_empty_namespace_gets_cluster_scoped_objects() {
    let (store, lister) = fixture();
    store.add(pod(None, "global", &[], "n1")).unwrap();
    assert!(lister.namespaced("").get("global").is_some());
    assert!(lister.namespaced("").get("web-0").is_none());
}

#[test]
fn by_index_returns_the_objects_filed_under_the_value() {
    let (_, lister) = fixture();
    assert_eq!(
        names(&lister.by_index_name("node", "n1").unwrap()),
        ["a/web-0", "b/web-0"]
    );
    assert!(lister.by_index_name("node", "n9").unwrap().is_empty());
    assert_eq!(lister.index_keys_name("node", "n2").unwrap().len(), 2);
}

#[test]
fn namespaced_by_index_name_returns_only_the_namespace_s_objects_under_the_value() {
    let (_, lister) = fixture();
    assert_eq!(
        names(&lister.namespaced("b").by_index_name("node", "n1").unwrap()),
        ["b/web-0"]
    );
    assert!(
        lister
            .namespaced("c")
            .by_index_name("node", "n1")
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        lister
            .namespaced("a")
            .by_index_name("nope", "x")
            .unwrap_err(),
        IndexError::UnknownIndex("nope".into())
    );
}

#[test]
fn unknown_index_is_a_typed_error() {
    let (_, lister) = fixture();
    assert_eq!(
        lister.by_index_name("nope", "x").unwrap_err(),
        IndexError::UnknownIndex("nope".into())
    );
    assert!(matches!(
        lister.index_keys_name("nope", "x"),
        Err(IndexError::UnknownIndex(_))
    ));
}

/// A store without the namespace index: delegates everything else to a ThreadSafeStore.
struct NoNamespaceIndex(ThreadSafeStore<Pod>);

impl Store<Pod> for NoNamespaceIndex {
    fn add(&self, obj: Arc<Pod>) -> Result<Option<Arc<Pod>>, StoreError> {
        self.0.add(obj)
    }
    fn key_of(&self, obj: &Pod) -> Result<ObjectKey, KeyError> {
        self.0.key_of(obj)
    }
    fn delete(&self, key: &ObjectKey) -> Option<Arc<Pod>> {
        self.0.delete(key)
    }
    fn get(&self, key: &ObjectKey) -> Option<Arc<Pod>> {
        self.0.get(key)
    }
    fn list(&self) -> Vec<Arc<Pod>> {
        self.0.list()
    }
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.0.list_keys()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn replace(&self, objects: Vec<Arc<Pod>>, rv: &str) -> Result<ReplaceDiff<Pod>, StoreError> {
        self.0.replace(objects, rv)
    }
    fn resource_version(&self) -> Option<String> {
        self.0.resource_version()
    }
    fn set_resource_version(&self, rv: &str) {
        self.0.set_resource_version(rv)
    }
    fn apply(&self, batch: Vec<StoreOp<Pod>>) -> Result<Vec<Option<Arc<Pod>>>, StoreError> {
        self.0.apply(batch)
    }
}

impl Indexer<Pod> for NoNamespaceIndex {
    fn add_indexers(&self, indexers: Indexers<Pod>) -> Result<(), IndexError> {
        self.0.add_indexers(indexers)
    }
    fn index_names(&self) -> Vec<String> {
        Vec::new()
    }
    fn by_index(&self, index: &str, _: &str) -> Result<Vec<Arc<Pod>>, IndexError> {
        Err(IndexError::UnknownIndex(index.into()))
    }
    fn index_keys(&self, index: &str, _: &str) -> Result<Vec<ObjectKey>, IndexError> {
        Err(IndexError::UnknownIndex(index.into()))
    }
    fn list_index_values(&self, index: &str) -> Result<Vec<String>, IndexError> {
        Err(IndexError::UnknownIndex(index.into()))
    }
    fn index(&self, index: &str, _: &Pod) -> Result<Vec<Arc<Pod>>, IndexError> {
        Err(IndexError::UnknownIndex(index.into()))
    }
}

#[test]
fn namespaced_lister_filters_by_key_when_the_store_has_no_namespace_index() {
    let store = NoNamespaceIndex(ThreadSafeStore::new());
    store.add(pod(Some("a"), "x", &[], "n")).unwrap();
    store.add(pod(Some("b"), "y", &[], "n")).unwrap();
    store.add(pod(None, "z", &[], "n")).unwrap();
    let lister = Lister::new(Arc::new(store) as Arc<dyn Indexer<Pod>>);
    assert_eq!(names(&lister.namespaced("a").list()), ["a/x"]);
    assert_eq!(names(&lister.namespaced("").list()), ["/z", "a/x", "b/y"]);
}

/// Pods by node, as a typed index.
struct PodsByNode;

impl Index<Pod> for PodsByNode {
    const NAME: &'static str = "lister::tests::pods_by_node";
    fn values(pod: &Pod) -> Vec<String> {
        pod.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .into_iter()
            .collect()
    }
}

#[test]
fn typed_index_is_registered_on_first_use_and_indexes_cached_objects() {
    let (store, lister) = fixture();
    assert!(!store.index_names().iter().any(|n| n == PodsByNode::NAME));
    assert_eq!(
        names(&lister.by_index::<PodsByNode>("n1")),
        ["a/web-0", "b/web-0"]
    );
    assert!(store.index_names().iter().any(|n| n == PodsByNode::NAME));
    assert_eq!(lister.index_keys::<PodsByNode>("n2").len(), 2);
    assert!(lister.by_index::<PodsByNode>("n9").is_empty());
}

#[test]
fn a_namespaced_typed_index_read_returns_only_its_namespaces_objects() {
    let (store, lister) = fixture();
    store.add(pod(None, "cluster-wide", &[], "n1")).unwrap();
    assert_eq!(
        names(&lister.namespaced("a").by_index::<PodsByNode>("n1")),
        ["a/web-0"]
    );
    assert_eq!(
        names(&lister.namespaced("b").by_index::<PodsByNode>("n2")),
        ["b/bare"]
    );
    assert_eq!(
        names(&lister.namespaced("").by_index::<PodsByNode>("n1")),
        ["/cluster-wide", "a/web-0", "b/web-0"],
        "the empty namespace reads every namespace"
    );
    assert!(
        lister
            .namespaced("c")
            .by_index::<PodsByNode>("n1")
            .is_empty()
    );
}

#[test]
fn typed_index_follows_writes_after_registration() {
    let (store, lister) = fixture();
    assert_eq!(lister.by_index::<PodsByNode>("n7").len(), 0);
    store.add(pod(Some("c"), "late", &[], "n7")).unwrap();
    assert_eq!(names(&lister.by_index::<PodsByNode>("n7")), ["c/late"]);
}

#[test]
fn ensuring_a_typed_index_twice_registers_it_once() {
    let (store, _) = fixture();
    ensure_index::<Pod, PodsByNode>(&*store).unwrap();
    ensure_index::<Pod, PodsByNode>(&*store).unwrap();
    let count = store
        .index_names()
        .iter()
        .filter(|n| *n == PodsByNode::NAME)
        .count();
    assert_eq!(count, 1);
}

#[test]
fn index_values_accept_options_strings_and_sets() {
    assert!(None::<String>.into_index_values().is_empty());
    assert_eq!(Some("x".to_owned()).into_index_values(), ["x"]);
    assert_eq!("y".to_owned().into_index_values(), ["y"]);
    let set: std::collections::BTreeSet<String> = ["b".into(), "a".into()].into();
    assert_eq!(set.into_index_values(), ["a", "b"]);
}

#[test]
fn a_typed_index_the_store_cannot_serve_is_an_error_from_the_try_reads_and_empty_otherwise() {
    let store = NoNamespaceIndex(ThreadSafeStore::new());
    store.add(pod(Some("a"), "x", &[], "n1")).unwrap();
    let lister = Lister::new(Arc::new(store) as Arc<dyn Indexer<Pod>>);
    let unknown = IndexError::UnknownIndex(PodsByNode::NAME.into());
    assert_eq!(
        lister.try_by_index::<PodsByNode>("n1").unwrap_err(),
        unknown
    );
    assert_eq!(
        lister.try_index_keys::<PodsByNode>("n1").unwrap_err(),
        unknown
    );
    assert_eq!(
        lister
            .namespaced("a")
            .try_by_index::<PodsByNode>("n1")
            .unwrap_err(),
        unknown
    );
    assert!(lister.by_index::<PodsByNode>("n1").is_empty());
    assert!(
        lister
            .namespaced("a")
            .by_index::<PodsByNode>("n1")
            .is_empty()
    );
}

#[test]
fn the_try_reads_agree_with_the_plain_ones_on_a_store_that_serves_the_index() {
    let (_, lister) = fixture();
    assert_eq!(
        names(&lister.try_by_index::<PodsByNode>("n1").unwrap()),
        names(&lister.by_index::<PodsByNode>("n1"))
    );
    assert_eq!(
        names(
            &lister
                .namespaced("a")
                .try_by_index::<PodsByNode>("n1")
                .unwrap()
        ),
        names(&lister.namespaced("a").by_index::<PodsByNode>("n1"))
    );
}
