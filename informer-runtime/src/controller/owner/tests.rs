use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Node, Pod};

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

fn deployment(namespace: Option<&str>, name: &str, uid: Option<&str>) -> Deployment {
    let mut d = Deployment::default();
    d.metadata.name = Some(name.into());
    d.metadata.namespace = namespace.map(Into::into);
    d.metadata.uid = uid.map(Into::into);
    d
}

#[test]
fn set_controller_reference_adds_a_blocking_controller_reference_and_keeps_the_others() {
    let owner = deployment(Some("ns"), "web", Some("u-1"));
    let mut pod = pod_owned_by(vec![reference("v1", "ConfigMap", "settings", None)]);
    set_controller_reference(&owner, &mut pod).unwrap();
    let refs = pod.metadata.owner_references.as_ref().unwrap();
    assert_eq!(refs.len(), 2);
    assert_eq!(
        (
            &refs[1].api_version[..],
            &refs[1].kind[..],
            &refs[1].name[..],
            &refs[1].uid[..]
        ),
        ("apps/v1", "Deployment", "web", "u-1")
    );
    assert_eq!(
        (refs[1].controller, refs[1].block_owner_deletion),
        (Some(true), Some(true))
    );
}

#[test]
fn set_controller_reference_replaces_the_reference_to_the_same_owner() {
    // A new incarnation of the owner (another uid), referred to through another version.
    let mut pod = pod_owned_by(vec![reference(
        "apps/v1beta1",
        "Deployment",
        "web",
        Some(true),
    )]);
    set_controller_reference(&deployment(Some("ns"), "web", Some("u-2")), &mut pod).unwrap();
    let refs = pod.metadata.owner_references.as_ref().unwrap();
    assert_eq!(refs.len(), 1);
    assert_eq!(
        (&refs[0].api_version[..], &refs[0].uid[..]),
        ("apps/v1", "u-2")
    );
}

#[test]
fn set_controller_reference_refuses_an_object_with_another_controller() {
    let mut pod = pod_owned_by(vec![reference(
        "apps/v1",
        "ReplicaSet",
        "web-1",
        Some(true),
    )]);
    let err = set_controller_reference(&deployment(Some("ns"), "web", Some("u-1")), &mut pod)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "object ns/p is already owned by another ReplicaSet controller web-1"
    );
    assert_eq!(pod.metadata.owner_references.as_ref().unwrap().len(), 1);
}

#[test]
fn set_controller_reference_refuses_owners_across_namespaces_and_without_uid() {
    let mut pod = pod_owned_by(Vec::new());
    assert!(matches!(
        set_controller_reference(&deployment(Some("other"), "web", Some("u")), &mut pod),
        Err(OwnerReferenceError::CrossNamespace { .. })
    ));
    let mut node = Node::default();
    node.metadata.name = Some("n".into());
    assert!(matches!(
        set_controller_reference(&deployment(Some("ns"), "web", Some("u")), &mut node),
        Err(OwnerReferenceError::ClusterScopedObject { .. })
    ));
    assert!(matches!(
        set_controller_reference(&deployment(Some("ns"), "web", None), &mut pod),
        Err(OwnerReferenceError::OwnerWithoutUid { .. })
    ));
    // A cluster-scoped owner may own a namespaced object.
    let mut owner = Node::default();
    owner.metadata.name = Some("n".into());
    owner.metadata.uid = Some("u-n".into());
    set_controller_reference(&owner, &mut pod).unwrap();
}
