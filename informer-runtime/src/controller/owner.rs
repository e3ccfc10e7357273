//! Owner references: from a child object to the key of its controlling owner.

use informer_core::ObjectKey;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
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

/// Why [`set_controller_reference`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OwnerReferenceError {
    /// The object already has a controlling owner, another one (controller-runtime's
    /// `AlreadyOwnedError`).
    #[error("object {object} is already owned by another {kind} controller {name}")]
    AlreadyOwned {
        /// The object.
        object: ObjectKey,
        /// The kind of its controller.
        kind: String,
        /// The name of its controller.
        name: String,
    },
    /// A namespaced owner in another namespace: owner references never cross namespaces.
    #[error(
        "cross-namespace owner references are disallowed, owner's namespace {owner_namespace}, obj's namespace {object_namespace}"
    )]
    CrossNamespace {
        /// The owner's namespace.
        owner_namespace: String,
        /// The object's namespace.
        object_namespace: String,
    },
    /// A cluster-scoped object cannot be owned by a namespaced one.
    #[error(
        "cluster-scoped resource must not have a namespace-scoped owner, owner's namespace {owner_namespace}"
    )]
    ClusterScopedObject {
        /// The owner's namespace.
        owner_namespace: String,
    },
    /// The owner has no `metadata.uid` (it was not read from the API server).
    #[error("the owner {owner} has no metadata.uid: use the object the API server returned")]
    OwnerWithoutUid {
        /// The owner.
        owner: ObjectKey,
    },
}

/// Makes `owner` the controller of `object`, as controller-runtime's
/// `controllerutil.SetControllerReference` does: an owner reference with `controller: true`
/// and `blockOwnerDeletion: true` (so a foreground deletion of the owner waits for the
/// object), replacing one to the same owner (same API group, kind and name) and keeping the
/// others. For an object a reconcile creates by hand; declared children
/// ([`ControllerBuilder::children`](crate::controller::ControllerBuilder::children)) are
/// owned without it.
///
/// # Errors
/// [`OwnerReferenceError`]: the object has another controller, or the owner is in another
/// namespace (or namespaced, for a cluster-scoped object), or has no UID.
///
/// ```
/// use informer_runtime::controller::{is_controlled_by, set_controller_reference};
/// use k8s_openapi::api::batch::v1::{CronJob, Job};
///
/// let mut cron = CronJob::default();
/// cron.metadata.name = Some("nightly".into());
/// cron.metadata.namespace = Some("shop".into());
/// cron.metadata.uid = Some("uid-1".into());
/// let mut job = Job::default();
/// job.metadata.name = Some("nightly-1700000000".into());
/// job.metadata.namespace = Some("shop".into());
/// set_controller_reference(&cron, &mut job)?;
/// assert!(is_controlled_by(&job, &cron));
/// let reference = &job.metadata.owner_references.as_ref().unwrap()[0];
/// assert_eq!((reference.api_version.as_str(), reference.kind.as_str()), ("batch/v1", "CronJob"));
/// assert_eq!(reference.block_owner_deletion, Some(true));
/// # Ok::<(), informer_runtime::controller::OwnerReferenceError>(())
/// ```
pub fn set_controller_reference<O>(
    owner: &O,
    object: &mut impl Resource,
) -> Result<(), OwnerReferenceError>
where
    O: Resource<DynamicType: Default>,
{
    let owner_meta = owner.meta();
    let owner_key = ObjectKey::new(
        owner_meta.namespace.as_deref(),
        owner_meta.name.as_deref().unwrap_or_default(),
    );
    if let Some(owner_namespace) = owner_meta.namespace.as_deref().filter(|n| !n.is_empty()) {
        match object.meta().namespace.as_deref().filter(|n| !n.is_empty()) {
            None => {
                return Err(OwnerReferenceError::ClusterScopedObject {
                    owner_namespace: owner_namespace.to_owned(),
                });
            }
            Some(namespace) if namespace != owner_namespace => {
                return Err(OwnerReferenceError::CrossNamespace {
                    owner_namespace: owner_namespace.to_owned(),
                    object_namespace: namespace.to_owned(),
                });
            }
            Some(_) => {}
        }
    }
    let Some(uid) = owner_meta.uid.clone().filter(|uid| !uid.is_empty()) else {
        return Err(OwnerReferenceError::OwnerWithoutUid { owner: owner_key });
    };
    let dt = O::DynamicType::default();
    let reference = OwnerReference {
        api_version: O::api_version(&dt).into_owned(),
        kind: O::kind(&dt).into_owned(),
        name: owner_key.name().to_owned(),
        uid,
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let same = |r: &OwnerReference| {
        group_of(&r.api_version) == group_of(&reference.api_version)
            && r.kind == reference.kind
            && r.name == reference.name
    };
    let meta = object.meta_mut();
    let references = meta.owner_references.get_or_insert_with(Vec::new);
    if let Some(existing) = references
        .iter()
        .find(|r| r.controller == Some(true))
        .filter(|r| !same(r))
    {
        return Err(OwnerReferenceError::AlreadyOwned {
            object: ObjectKey::new(
                meta.namespace.as_deref(),
                meta.name.as_deref().unwrap_or_default(),
            ),
            kind: existing.kind.clone(),
            name: existing.name.clone(),
        });
    }
    match references.iter_mut().find(|r| same(r)) {
        Some(existing) => *existing = reference,
        None => references.push(reference),
    }
    Ok(())
}

#[cfg(test)]
mod tests;
