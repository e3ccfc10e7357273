//! The compile-time check of a declared status's type (`status = f`): when the controller's
//! resource has a known status type, `f` must return it or an `Option` of it. A function
//! returning anything else that serializes would otherwise compile and then fail every
//! reconcile against the API server's schema (`.status: expected map, got ...`).
//!
//! The status type is known for a resource that declares it (kube's `HasStatus`, which
//! `#[derive(CustomResource)]` implements for `#[kube(status = "...")]`), and for the
//! k8s-openapi types with a status ([`BuiltinStatus`]). Other resources are not checked.
//! The three cases are told apart by autoref specialization: the call is
//! `(&&&of::<S, _, _>(&f)).check()`, which finds [`DeclaredStatus`] first, then
//! [`KnownStatus`], then [`AnyStatus`].

use std::marker::PhantomData;

use kube::core::object::HasStatus;

use crate::controller::{ControllerSpec, DesiredStatus};

/// A status function's resource and return type, for the check.
pub struct StatusCheck<K, T>(PhantomData<fn() -> (K, T)>);

/// The check of `f` for controller `S`: call `.check()` on a reference to it. A function
/// of the wrong form fails the same bound as the status call itself (one error).
pub fn of<S, M, F>(_f: &F) -> StatusCheck<S::Resource, F::Output>
where
    S: ControllerSpec,
    F: DesiredStatus<S, M>,
{
    StatusCheck(PhantomData)
}

/// A value a status function may return for a resource whose status type is `S`.
#[diagnostic::on_unimplemented(
    message = "the status function returns `{Self}`, but the resource's status is `{S}`",
    label = "this function's return type is not the resource's status type",
    note = "`status = f` returns the resource's status type (`{S}`), or `Option<{S}>` to leave the status as it is; errors belong in `reconcile`"
)]
pub trait IsStatusOf<S> {}

// Not listed under the error (its note says both forms, in the user's types).
#[diagnostic::do_not_recommend]
impl<S> IsStatusOf<S> for S {}
#[diagnostic::do_not_recommend]
impl<S> IsStatusOf<S> for Option<S> {}

/// What a status function returns (`T`) and what it must return (`S`); [`require`]
/// compiles only if they agree.
pub struct Expect<T, S>(PhantomData<fn() -> (T, S)>);

/// The check for a resource with a declared status type (chosen first).
pub trait DeclaredStatus {
    /// What the function returns.
    type Returned;
    /// The resource's status type.
    type Status;
    /// The pair to [`require`].
    fn check(&self) -> Expect<Self::Returned, Self::Status> {
        Expect(PhantomData)
    }
}

impl<K: HasStatus, T> DeclaredStatus for &&StatusCheck<K, T> {
    type Returned = T;
    type Status = K::Status;
}

/// The status type of a k8s-openapi resource (its `status` field's), for the check.
pub trait BuiltinStatus {
    /// The type of the resource's `status`.
    type Status;
}

/// The check for a k8s-openapi resource with a status (chosen second).
pub trait KnownStatus {
    /// What the function returns.
    type Returned;
    /// The resource's status type.
    type Status;
    /// The pair to [`require`].
    fn check(&self) -> Expect<Self::Returned, Self::Status> {
        Expect(PhantomData)
    }
}

impl<K: BuiltinStatus, T> KnownStatus for &StatusCheck<K, T> {
    type Returned = T;
    type Status = K::Status;
}

/// The check for any other resource (chosen last): nothing to compare with.
pub trait AnyStatus {
    /// A pair that always agrees.
    fn check(&self) -> Expect<(), ()> {
        Expect(PhantomData)
    }
}

impl<K, T> AnyStatus for StatusCheck<K, T> {}

/// Compiles only if the status function returns the resource's status type or an `Option`
/// of it.
pub fn require<T: IsStatusOf<S>, S>(_: Expect<T, S>) {}

/// `BuiltinStatus` for k8s-openapi resources: `Resource => Status`.
macro_rules! builtin_status {
    ($($resource:ty => $status:ty),* $(,)?) => {
        $(impl BuiltinStatus for $resource {
            type Status = $status;
        })*
    };
}

mod builtin {
    use k8s_openapi::api::admissionregistration::v1 as admission;
    use k8s_openapi::api::apps::v1 as apps;
    use k8s_openapi::api::autoscaling::{v1 as autoscaling_v1, v2 as autoscaling_v2};
    use k8s_openapi::api::batch::v1 as batch;
    use k8s_openapi::api::certificates::v1 as certificates;
    use k8s_openapi::api::core::v1 as core;
    use k8s_openapi::api::flowcontrol::v1 as flowcontrol;
    use k8s_openapi::api::networking::v1 as networking;
    use k8s_openapi::api::policy::v1 as policy;
    use k8s_openapi::api::storage::v1 as storage;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;

    use super::BuiltinStatus;

    // The stable resources with a status in every Kubernetes version k8s-openapi supports.
    builtin_status! {
        core::Namespace => core::NamespaceStatus,
        core::Node => core::NodeStatus,
        core::PersistentVolume => core::PersistentVolumeStatus,
        core::PersistentVolumeClaim => core::PersistentVolumeClaimStatus,
        core::Pod => core::PodStatus,
        core::ReplicationController => core::ReplicationControllerStatus,
        core::ResourceQuota => core::ResourceQuotaStatus,
        core::Service => core::ServiceStatus,
        apps::DaemonSet => apps::DaemonSetStatus,
        apps::Deployment => apps::DeploymentStatus,
        apps::ReplicaSet => apps::ReplicaSetStatus,
        apps::StatefulSet => apps::StatefulSetStatus,
        batch::CronJob => batch::CronJobStatus,
        batch::Job => batch::JobStatus,
        autoscaling_v1::HorizontalPodAutoscaler => autoscaling_v1::HorizontalPodAutoscalerStatus,
        autoscaling_v2::HorizontalPodAutoscaler => autoscaling_v2::HorizontalPodAutoscalerStatus,
        networking::Ingress => networking::IngressStatus,
        policy::PodDisruptionBudget => policy::PodDisruptionBudgetStatus,
        certificates::CertificateSigningRequest => certificates::CertificateSigningRequestStatus,
        admission::ValidatingAdmissionPolicy => admission::ValidatingAdmissionPolicyStatus,
        flowcontrol::FlowSchema => flowcontrol::FlowSchemaStatus,
        flowcontrol::PriorityLevelConfiguration => flowcontrol::PriorityLevelConfigurationStatus,
        storage::VolumeAttachment => storage::VolumeAttachmentStatus,
        apiextensions::CustomResourceDefinition => apiextensions::CustomResourceDefinitionStatus,
    }
}
