//! Owner references: from a child object to the key of its controlling owner.

use informer_core::ObjectKey;
use kube::Resource;
use kube::core::ObjectMeta;

use super::scope::ControllerScope;

/// Finds the controlling owner of kind `O` in an object's `ownerReferences`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OwnerMatcher {
    kind: String,
    group: String,
    namespaced: bool,
}

impl OwnerMatcher {
    pub(crate) fn of<O>() -> Self
    where
        O: Resource,
        O::DynamicType: Default,
        O::Scope: ControllerScope,
    {
        let dt = O::DynamicType::default();
        Self {
            kind: O::kind(&dt).into_owned(),
            group: O::group(&dt).into_owned(),
            namespaced: <O::Scope as ControllerScope>::NAMESPACED,
        }
    }

    /// The key of the controlling owner described by `child`'s metadata, if it has one of
    /// this kind.
    pub(crate) fn owner_key(&self, child: &ObjectMeta) -> Option<ObjectKey> {
        let owner = child.owner_references.as_ref()?.iter().find(|r| {
            r.controller == Some(true)
                && r.kind == self.kind
                && group_of(&r.api_version) == self.group
        })?;
        if owner.name.is_empty() {
            return None;
        }
        let namespace = if self.namespaced {
            child.namespace.as_deref()
        } else {
            None
        };
        Some(ObjectKey::new(namespace, &owner.name))
    }
}

/// The group of an `apiVersion` (`apps/v1` → `apps`, `v1` → the core group `""`).
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// The key of `child`'s **controlling** owner, if that owner is of type `O`.
///
/// The owner reference must have `controller: true` and name the kind and API group of `O`
/// (the version is not compared, as in controller-runtime: an owner may be referred to
/// through any version the server serves). The owner's namespace is the child's (owner
/// references never cross namespaces); for a cluster-scoped `O` the key has none.
///
/// This is the mapping [`ControllerBuilder::owns`](crate::controller::ControllerBuilder::owns)
/// uses; it is public for custom mappers.
///
/// ```
/// use informer_core::ObjectKey;
/// use informer_runtime::controller::controller_owner;
/// use k8s_openapi::api::apps::v1::ReplicaSet;
/// use k8s_openapi::api::core::v1::Pod;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
///
/// let mut pod = Pod::default();
/// pod.metadata.namespace = Some("shop".into());
/// pod.metadata.owner_references = Some(vec![OwnerReference {
///     api_version: "apps/v1".into(),
///     kind: "ReplicaSet".into(),
///     name: "web-7d9f".into(),
///     uid: "1234".into(),
///     controller: Some(true),
///     ..Default::default()
/// }]);
/// assert_eq!(controller_owner::<ReplicaSet>(&pod), Some(ObjectKey::new(Some("shop"), "web-7d9f")));
/// ```
pub fn controller_owner<O>(child: &impl Resource) -> Option<ObjectKey>
where
    O: Resource,
    O::DynamicType: Default,
    O::Scope: ControllerScope,
{
    OwnerMatcher::of::<O>().owner_key(child.meta())
}

/// Whether `owner` is `child`'s controlling owner: the owner reference with
/// `controller: true` carries `owner`'s UID (apimachinery's `metav1.IsControlledBy`).
///
/// Compare UIDs, not names, before changing a child: an owner deleted and created again
/// under its name is another object, and the children of the first are not its own. The
/// reference to put on a child is kube's
/// [`Resource::controller_owner_ref`](kube::Resource::controller_owner_ref)
/// (`metav1.NewControllerRef`).
///
/// ```
/// use informer_runtime::controller::is_controlled_by;
/// use k8s_openapi::api::apps::v1::Deployment;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::Resource;
///
/// let mut owner = ConfigMap::default();
/// owner.metadata.name = Some("web".into());
/// owner.metadata.uid = Some("uid-1".into());
/// let mut child = Deployment::default();
/// child.metadata.owner_references = Some(vec![owner.controller_owner_ref(&()).unwrap()]);
/// assert!(is_controlled_by(&child, &owner));
///
/// owner.metadata.uid = Some("uid-2".into()); // the same name, another object
/// assert!(!is_controlled_by(&child, &owner));
/// ```
pub fn is_controlled_by(child: &impl Resource, owner: &impl Resource) -> bool {
    let Some(uid) = owner.meta().uid.as_deref() else {
        return false;
    };
    child
        .meta()
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .is_some_and(|r| r.uid == uid)
}

#[cfg(test)]
mod tests;
