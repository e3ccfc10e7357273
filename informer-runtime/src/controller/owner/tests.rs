use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use super::*;

fn pod_owned_by(refs: Vec<OwnerReference>) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.name = Some("p".into());
    pod.metadata.namespace = Some("ns".into());
    pod.metadata.owner_references = Some(refs);
    pod
}

fn reference(
    api_version: &str,
    kind: &str,
    name: &str,
    controller: Option<bool>,
) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: "uid".into(),
        controller,
        ..Default::default()
    }
}

#[test]
fn only_the_controlling_owner_reference_maps() {
    let pod = pod_owned_by(vec![
        reference("apps/v1", "ReplicaSet", "not-controller", Some(false)),
        reference("apps/v1", "ReplicaSet", "unset", None),
        reference("apps/v1", "ReplicaSet", "rs", Some(true)),
    ]);
    assert_eq!(
        controller_owner::<ReplicaSet>(&pod),
        Some(ObjectKey::new(Some("ns"), "rs"))
    );
    let uncontrolled = pod_owned_by(vec![reference("apps/v1", "ReplicaSet", "rs", Some(false))]);
    assert_eq!(controller_owner::<ReplicaSet>(&uncontrolled), None);
}

#[test]
fn owner_reference_must_match_kind_and_group() {
    let pod = pod_owned_by(vec![reference("apps/v1", "ReplicaSet", "rs", Some(true))]);
    assert_eq!(controller_owner::<Deployment>(&pod), None, "other kind");
    let wrong_group = pod_owned_by(vec![reference(
        "extensions/v1beta1",
        "ReplicaSet",
        "rs",
        Some(true),
    )]);
    assert_eq!(
        controller_owner::<ReplicaSet>(&wrong_group),
        None,
        "other group"
    );
    let other_version = pod_owned_by(vec![reference(
        "apps/v1beta2",
        "ReplicaSet",
        "rs",
        Some(true),
    )]);
    assert_eq!(
        controller_owner::<ReplicaSet>(&other_version),
        Some(ObjectKey::new(Some("ns"), "rs")),
        "the version is not compared"
    );
}

#[test]
fn core_group_owner_has_no_group_in_api_version() {
    let pod = pod_owned_by(vec![reference("v1", "Node", "node-1", Some(true))]);
    assert_eq!(
        controller_owner::<Node>(&pod),
        Some(ObjectKey::cluster("node-1"))
    );
    assert_eq!(controller_owner::<Pod>(&pod), None);
}

#[test]
fn cluster_scoped_owner_key_has_no_namespace() {
    let pod = pod_owned_by(vec![reference("v1", "Node", "node-1", Some(true))]);
    assert_eq!(controller_owner::<Node>(&pod).unwrap().namespace(), None);
}

#[test]
fn object_without_owner_references_maps_to_nothing() {
    assert_eq!(controller_owner::<ReplicaSet>(&Pod::default()), None);
    let empty_name = pod_owned_by(vec![reference("apps/v1", "ReplicaSet", "", Some(true))]);
    assert_eq!(controller_owner::<ReplicaSet>(&empty_name), None);
}
