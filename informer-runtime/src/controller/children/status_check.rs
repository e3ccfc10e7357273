//! The compile-time check of a declared status's type (`status = f`): when the controller's
//! resource declares its status type (kube's `HasStatus`, which `#[derive(CustomResource)]`
//! implements for `#[kube(status = "...")]`), `f` must return it or an `Option` of it. A
//! function returning anything else that serializes would otherwise compile and then fail
//! every reconcile against the API server's schema.
//!
//! Resources that do not implement `HasStatus` (k8s-openapi's types) are not checked: the
//! call resolves to [`AnyStatus`] by autoref specialization.

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

impl<S> IsStatusOf<S> for S {}
impl<S> IsStatusOf<S> for Option<S> {}

/// What a status function returns (`T`) and what it must return (`S`); [`require`]
/// compiles only if they agree.
pub struct Expect<T, S>(PhantomData<fn() -> (T, S)>);

/// The check for a resource with a declared status type (chosen first: by value).
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

impl<K: HasStatus, T> DeclaredStatus for StatusCheck<K, T> {
    type Returned = T;
    type Status = K::Status;
}

/// The check for any other resource (chosen by autoref when the resource has no declared
/// status type): nothing to compare with.
pub trait AnyStatus {
    /// A pair that always agrees.
    fn check(&self) -> Expect<(), ()> {
        Expect(PhantomData)
    }
}

impl<K, T> AnyStatus for &StatusCheck<K, T> {}

/// Compiles only if the status function returns the resource's status type or an `Option`
/// of it.
pub fn require<T: IsStatusOf<S>, S>(_: Expect<T, S>) {}
