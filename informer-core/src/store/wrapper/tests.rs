use k8s_openapi::api::core::v1::ConfigMap;

use super::recording::Recording;
use super::*;

fn cm(name: &str) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.namespace = Some("ns".into());
    Arc::new(cm)
}

#[test]
fn every_write_of_objects_reaches_apply() {
    let store = Recording::new();
    assert!(Store::add(&store, cm("a")).unwrap().is_none());
    assert!(
        Store::update(&store, cm("a")).unwrap().is_some(),
        "returns what it replaced"
    );
    let key = ObjectKey::new(Some("ns"), "a");
    Store::update_with_key(&store, key.clone(), cm("a")).unwrap();
    assert!(Store::delete(&store, &key).is_some());
    Store::apply(
        &store,
        vec![StoreOp::Upsert(cm("b")), StoreOp::Upsert(cm("c"))],
    )
    .unwrap();
    assert_eq!(store.batches(), [1, 1, 1, 1, 2]);
    Store::replace(&store, vec![cm("d")], "7").unwrap();
    assert_eq!(store.replaces(), 1);
}

#[test]
fn what_a_wrapper_does_not_override_is_the_inner_stores() {
    let store = Recording::new();
    Store::add(&store, cm("a")).unwrap();
    assert_eq!(Store::len(&store), 1);
    assert_eq!(Store::list_keys(&store), [ObjectKey::new(Some("ns"), "a")]);
    assert!(Store::get(&store, &ObjectKey::new(Some("ns"), "a")).is_some());
    Store::set_resource_version(&store, "9");
    assert_eq!(Store::resource_version(&store).as_deref(), Some("9"));
    let indexers: Indexers<ConfigMap> = [(
        "name".to_owned(),
        crate::store::index_fn(|c: &ConfigMap| c.metadata.name.clone().into_iter().collect()),
    )]
    .into();
    Indexer::add_indexers(&store, indexers).unwrap();
    assert_eq!(Indexer::by_index(&store, "name", "a").unwrap().len(), 1);
    assert_eq!(Indexer::list_index_values(&store, "name").unwrap(), ["a"]);
    assert!(Indexer::index_names(&store).contains(&"name".to_owned()));
}
