//! How a child is marked as its parent's, and how the mark is read back.
//!
//! Every child carries the label [`CONTROLLER_LABEL`] (the controller's name, as a label
//! value): the controller watches its children through that label, so its cache holds its
//! own children only. Then, by where the child lives:
//!
//! - **Owner reference** (the parent is cluster-scoped, or the child is in the parent's
//!   namespace): an entry in `metadata.ownerReferences` with `controller: true` and
//!   `blockOwnerDeletion: true`. The cluster's garbage collector deletes the child when the
//!   parent goes.
//! - **Labels** (a namespaced parent and a child elsewhere: owner references cannot cross
//!   namespaces): the label [`OWNER_UID_LABEL`] (the parent's UID: 36 characters, within a
//!   label value's 63) and the annotation [`OWNER_ANNOTATION`] (the parent's
//!   `namespace/name`: names reach 253 characters, too long for a label). No garbage
//!   collector knows these: the controller deletes such children itself when their parent
//!   is gone.
//!
//! And the annotation [`APPLIED_HASH_ANNOTATION`]: a hash of the body last applied.

use informer_core::ObjectKey;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;
use kube::core::ObjectMeta;

use crate::controller::ControllerResource;
use crate::controller::owner::OwnerMatcher;
use crate::controller::scope::ControllerScope;

/// The label every child carries: the name of the controller managing it.
pub const CONTROLLER_LABEL: &str = "informer.dev/controller";

/// The label of a child in another namespace than its parent: the parent's UID.
pub const OWNER_UID_LABEL: &str = "informer.dev/owner-uid";

/// The annotation of a child in another namespace than its parent: the parent's key
/// (`namespace/name`).
pub const OWNER_ANNOTATION: &str = "informer.dev/owner";

/// The annotation recording a hash of what the controller last applied to a child: a
/// child whose annotation matches what would be applied now, and whose fields still hold
/// it, is not written again. (Without it, a field the controller stopped wanting would
/// stay: the cached child would still hold everything wanted.)
pub const APPLIED_HASH_ANNOTATION: &str = "informer.dev/applied-hash";

/// The longest label value the API server accepts.
const MAX_LABEL_VALUE: usize = 63;

/// `name` as a label value: itself if it is one (at most 63 characters, alphanumerics with
/// `-`, `_` or `.` inside), otherwise a value made from its hash (`c-` and 16 hex digits),
/// the same in every process.
pub(crate) fn label_value(name: &str) -> String {
    let valid = !name.is_empty()
        && name.len() <= MAX_LABEL_VALUE
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name.as_bytes()[name.len() - 1].is_ascii_alphanumeric();
    if valid {
        name.to_owned()
    } else {
        format!("c-{:016x}", fnv1a(name.as_bytes()))
    }
}

/// FNV-1a, 64 bits: a hash stable across processes and Rust versions.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The parent kind and the controller: how children are marked and recognised.
#[derive(Debug, Clone)]
pub(crate) struct Ownership {
    /// The controller's name as a label value.
    pub(crate) controller: String,
    api_version: String,
    kind: String,
    parent_namespaced: bool,
    matcher: OwnerMatcher,
}

/// How one child is tied to its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tie {
    /// An owner reference (the garbage collector's).
    OwnerReference,
    /// Labels and an annotation (the controller's own).
    Labels,
}

impl Ownership {
    /// The ownership of children of a parent `P` by controller `controller`.
    pub(crate) fn of<P: ControllerResource>(controller: &str) -> Self {
        let dt = P::DynamicType::default();
        Self {
            controller: label_value(controller),
            api_version: P::api_version(&dt).into_owned(),
            kind: P::kind(&dt).into_owned(),
            parent_namespaced: <P::Scope as ControllerScope>::NAMESPACED,
            matcher: OwnerMatcher::of::<P>(),
        }
    }

    /// How a child in `child_namespace` (`None`: cluster-scoped) is tied to a parent in
    /// `parent_namespace`.
    pub(crate) fn tie(&self, parent_namespace: Option<&str>, child_namespace: Option<&str>) -> Tie {
        if !self.parent_namespaced
            || (child_namespace.is_some() && child_namespace == parent_namespace)
        {
            Tie::OwnerReference
        } else {
            Tie::Labels
        }
    }

    /// The owner reference a child of `parent` carries.
    pub(crate) fn owner_reference(&self, parent: &ObjectMeta) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            name: parent.name.clone().unwrap_or_default(),
            uid: parent.uid.clone().unwrap_or_default(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    /// The key of the parent of a child of this controller (`None`: not one of its children,
    /// or not marked), and how it is tied.
    pub(crate) fn parent_of(&self, child: &ObjectMeta) -> Option<(ObjectKey, Tie)> {
        let labels = child.labels.as_ref()?;
        if labels.get(CONTROLLER_LABEL) != Some(&self.controller) {
            return None;
        }
        if let Some(key) = self.matcher.owner_key(child) {
            return Some((key, Tie::OwnerReference));
        }
        let key = child.annotations.as_ref()?.get(OWNER_ANNOTATION)?;
        let key: ObjectKey = key.parse().ok()?;
        Some((key, Tie::Labels))
    }

    /// The label selector of this controller's children.
    pub(crate) fn selector(&self) -> String {
        format!("{CONTROLLER_LABEL}={}", self.controller)
    }

    /// The name of the index of children by parent key, on a cache of this controller's
    /// children.
    pub(crate) fn index_name(&self) -> String {
        format!("informer.dev/children-of:{}", self.controller)
    }
}

/// The parent of `child`, if it is one of `ownership`'s children: the index function.
pub(crate) fn parent_key<C: Resource>(ownership: &Ownership, child: &C) -> Option<ObjectKey> {
    ownership.parent_of(child.meta()).map(|(key, _)| key)
}

#[cfg(test)]
mod tests;
