//! Declared children: a controller states, for each parent, the child objects it wants;
//! the library makes the cluster match.
//!
//! ```text
//! reconcile(parent key) --> desired(&parent) --> [children]
//!   each child: + apiVersion/kind, namespace, controller label, owner reference or owner labels
//!               cached child already holds it? -> unchanged
//!               otherwise -> server-side apply (field manager: the controller's name, force)
//!               create-only children: missing -> created (POST); present -> never changed
//!   each cached child of this parent not desired any more -> delete
//!   parent gone (or being deleted) -> delete its children in other namespaces;
//!                                     the garbage collector deletes those with owner references
//!   parent out of view (still on the server, outside the cache's selectors) -> delete them all
//! then the user's reconcile (if any) runs
//! ```
//!
//! - `compare.rs`: whether a cached child already holds the desired fields (no write churn).
//! - `ownership.rs`: how a child is marked as its parent's (owner reference, or labels and an
//!   annotation across namespaces), and how the mark is read back (the children index).
//! - `sync.rs`: one child type's apply-and-delete step.
//!
//! Declared with [`ControllerBuilder::children`](super::ControllerBuilder::children) (or
//! `children(T, from = f)` in `#[derive(ControllerSpec)]`). The children are watched (their
//! changes reconcile their parent), through the label [`CONTROLLER_LABEL`], so the
//! controller's cache holds its own children only.

mod compare;
mod ownership;
mod status;
#[doc(hidden)]
pub mod status_check;
mod sync;

use std::fmt;
use std::sync::Arc;

use informer_core::ObjectKey;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::ResourceExt;

use super::finalizer::OwnFinalizer;
use super::reconciler::{BoxError, ErrorKind, KindedError, ReconcileError};
use super::spec::NotBuilt;
use super::{Action, Context, ContextCell, ControllerSpec, KeyReconciler};
use crate::api_error::brief;

pub use ownership::{APPLIED_HASH_ANNOTATION, CONTROLLER_LABEL, OWNER_ANNOTATION, OWNER_UID_LABEL};
pub(crate) use ownership::{Ownership, parent_key};
pub(crate) use status::{StatusFn, StatusSet, status_apply_body};
pub(crate) use sync::{ChildSet, DesiredFn, SyncChildren};

/// What a function computing children may return: `Vec<C>`, `Option<C>` (one child, or
/// none), or a `Result` of either whose error converts into a boxed error (computing the
/// children failed: the reconcile fails, transiently) or is a [`ReconcileError`] (failing
/// as its kind says: [`ReconcileError::terminal`] is not retried until the parent changes).
///
/// An empty `Vec` or `None` means "no children": existing ones are deleted. To leave them
/// as they are (a spec that cannot be read, say), return an error instead: nothing is
/// applied or deleted, and the reconcile is retried with backoff, or not at all for a
/// terminal error.
///
/// ```
/// use informer_runtime::controller::IntoChildren;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let one: Option<ConfigMap> = Some(ConfigMap::default());
/// assert_eq!(IntoChildren::<ConfigMap>::into_children(one).unwrap().len(), 1);
/// let failed: Result<Vec<ConfigMap>, std::fmt::Error> = Err(std::fmt::Error);
/// assert!(failed.into_children().is_err());
/// ```
#[diagnostic::on_unimplemented(
    message = "children cannot be computed as `{Self}`",
    label = "return `Vec<{C}>`, `Option<{C}>`, or a `Result` of either",
    note = "a function computing children returns every child it wants: `Vec<{C}>`; `Option<{C}>` for at most one; wrap either in `Result<_, E>` if computing them can fail"
)]
pub trait IntoChildren<C> {
    /// The children.
    ///
    /// # Errors
    /// The error of a `Result`.
    fn into_children(self) -> Result<Vec<C>, BoxError>;
}

impl<C> IntoChildren<C> for Vec<C> {
    fn into_children(self) -> Result<Vec<C>, BoxError> {
        Ok(self)
    }
}

impl<C> IntoChildren<C> for Option<C> {
    fn into_children(self) -> Result<Vec<C>, BoxError> {
        Ok(self.into_iter().collect())
    }
}

impl<C, T, E> IntoChildren<C> for Result<T, E>
where
    T: IntoChildren<C>,
    E: Into<BoxError>,
{
    fn into_children(self) -> Result<Vec<C>, BoxError> {
        self.map_err(Into::into)?.into_children()
    }
}

/// What `status = f` of `#[derive(ControllerSpec)]` accepts: `fn(&Parent) -> T` or `fn(&Parent,
/// &Context<S>) -> T`, `T` serializable (the resource's status type, or an `Option` of it:
/// `None` leaves the status as it is). (`Marker` only tells the forms apart; `P`, always
/// `S::Resource`, is spelled out so that a misspelt resource type is one error, not one more
/// per function.) `#[derive(ControllerSpec)]` also checks, for a resource that declares its
/// status type through kube's `HasStatus` (`#[kube(status = "...")]`), that `T` is that type or
/// an `Option` of it.
///
/// ```
/// use informer_runtime::controller::{
///     Controller, ControllerBuilder, ControllerSpec, DesiredStatus,
/// };
/// use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
///
/// struct Deployments;
/// impl ControllerSpec for Deployments {
///     type Resource = Deployment;
///     type Listers = ();
///     fn configure(&self, b: ControllerBuilder<Deployment>) -> ControllerBuilder<Deployment> { b }
///     fn listers(_: &Controller<Deployment>) {}
/// }
/// fn status(d: &Deployment) -> DeploymentStatus {
///     DeploymentStatus { observed_generation: d.metadata.generation, ..Default::default() }
/// }
/// fn check<M>(_: impl DesiredStatus<Deployments, M>) {}
/// check(status);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot compute the status of `{S}`'s resource",
    label = "expected `fn(&{P}) -> Status` or `fn(&{P}, &Context<{S}>) -> Status`",
    note = "`status = f` names a function from the parent (`&` the controller's resource), and optionally `&Context<{S}>`, to its status: a serializable value (the resource's status type), or `Option` of it (`None` leaves the status as it is); it is a plain `fn`, not an `async fn`: it computes from the cached objects, and waiting belongs in `reconcile`"
)]
pub trait DesiredStatus<S: ControllerSpec, Marker, P = <S as ControllerSpec>::Resource> {
    /// What the function returns: the resource's status type, or an `Option` of it.
    type Output;

    /// The status `parent` should have, as JSON.
    ///
    /// # Errors
    /// The status does not serialize, or the context is not set yet.
    fn status(
        &self,
        parent: &S::Resource,
        context: &ContextCell<S>,
    ) -> Result<serde_json::Value, BoxError>;
}

impl<S, F, T> DesiredStatus<S, fn(T), S::Resource> for F
where
    S: ControllerSpec,
    F: Fn(&S::Resource) -> T,
    T: serde::Serialize,
{
    type Output = T;

    fn status(
        &self,
        parent: &S::Resource,
        _context: &ContextCell<S>,
    ) -> Result<serde_json::Value, BoxError> {
        Ok(serde_json::to_value(self(parent))?)
    }
}

impl<S, F, T> DesiredStatus<S, fn(T, S), S::Resource> for F
where
    S: ControllerSpec,
    F: Fn(&S::Resource, &Context<S>) -> T,
    T: serde::Serialize,
{
    type Output = T;

    fn status(
        &self,
        parent: &S::Resource,
        context: &ContextCell<S>,
    ) -> Result<serde_json::Value, BoxError> {
        let context = context.get().ok_or(NotBuilt)?;
        Ok(serde_json::to_value(self(parent, context))?)
    }
}

/// What `validate = f` of `#[derive(ControllerSpec)]` accepts: `fn(&Parent) -> Result<(), E>`,
/// or `fn(&Parent, &Context<S>) -> Result<(), E>` to read the context's listers, `E` a
/// [`ReconcileError`] or any error (`?` works; an error that is not a `ReconcileError` is
/// transient). (`Marker` only tells the forms apart; `P`, always `S::Resource`, is spelled out
/// so that a misspelt resource type is one error, not one more per function.) See
/// [`ControllerBuilder::validate`](super::ControllerBuilder::validate).
///
/// ```
/// use informer_runtime::controller::{
///     Controller, ControllerBuilder, ControllerSpec, ReconcileError, Validator,
/// };
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// struct Settings;
/// impl ControllerSpec for Settings {
///     type Resource = ConfigMap;
///     type Listers = ();
///     fn configure(&self, b: ControllerBuilder<ConfigMap>) -> ControllerBuilder<ConfigMap> { b }
///     fn listers(_: &Controller<ConfigMap>) {}
/// }
/// fn has_mode(cm: &ConfigMap) -> Result<(), ReconcileError> {
///     match cm.data.as_ref().and_then(|d| d.get("mode")) {
///         Some(_) => Ok(()),
///         None => Err(ReconcileError::terminal("data.mode is required")),
///     }
/// }
/// fn check<M>(_: impl Validator<Settings, M>) {}
/// check(has_mode);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot validate the objects of `{S}`",
    label = "expected `fn(&{P}) -> Result<(), ReconcileError>` or `fn(&{P}, &Context<{S}>) -> Result<(), ReconcileError>`",
    note = "`validate = f` names a function run first for each live object: an `Err` writes no child, skips `reconcile` and the status, and goes to `on_error` (`ReconcileError::terminal` for a spec only its author can fix); it is a plain `fn`, not an `async fn`"
)]
pub trait Validator<S: ControllerSpec, Marker, P = <S as ControllerSpec>::Resource> {
    /// Whether `parent` can be served.
    ///
    /// # Errors
    /// The function's, or the context not being set yet (outside `into_controller`).
    fn validate(
        &self,
        parent: &S::Resource,
        context: &ContextCell<S>,
    ) -> Result<(), ReconcileError>;
}

impl<S, F, E> Validator<S, fn(E), S::Resource> for F
where
    S: ControllerSpec,
    F: Fn(&S::Resource) -> Result<(), E>,
    E: Into<ReconcileError>,
{
    fn validate(
        &self,
        parent: &S::Resource,
        _context: &ContextCell<S>,
    ) -> Result<(), ReconcileError> {
        self(parent).map_err(Into::into)
    }
}

impl<S, F, E> Validator<S, fn(E, S), S::Resource> for F
where
    S: ControllerSpec,
    F: Fn(&S::Resource, &Context<S>) -> Result<(), E>,
    E: Into<ReconcileError>,
{
    fn validate(
        &self,
        parent: &S::Resource,
        context: &ContextCell<S>,
    ) -> Result<(), ReconcileError> {
        let context = context
            .get()
            .ok_or_else(|| ReconcileError::transient(NotBuilt))?;
        self(parent, context).map_err(Into::into)
    }
}

/// What `children(C, from = f)` of `#[derive(ControllerSpec)]` accepts: `fn(&Parent) -> R`, or
/// `fn(&Parent, &Context<S>) -> R` to read the context's listers, where `R` is one of the
/// [`IntoChildren`] forms. (`Marker` only tells the forms apart; `P`, always `S::Resource`, is
/// spelled out so that a misspelt resource type is one error, not one more per function.)
///
/// ```
/// use informer_runtime::controller::{
///     Controller, ControllerBuilder, ControllerSpec, DesiredChildren,
/// };
/// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
///
/// struct Copies;
/// impl ControllerSpec for Copies {
///     type Resource = Secret;
///     type Listers = ();
///     fn configure(&self, b: ControllerBuilder<Secret>) -> ControllerBuilder<Secret> { b }
///     fn listers(_: &Controller<Secret>) {}
/// }
/// fn summary(secret: &Secret) -> Option<ConfigMap> {
///     let mut cm = ConfigMap::default();
///     cm.metadata.name = secret.metadata.name.clone();
///     Some(cm)
/// }
/// fn check<M>(_: impl DesiredChildren<Copies, ConfigMap, M>) {}
/// check(summary);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot compute the `{C}` children of `{S}`",
    label = "expected `fn(&{P}) -> Option<{C}>` (one child: `Some(child)`) or `-> Vec<{C}>`, or `fn(&{P}, &Context<{S}>) -> ...`",
    note = "`from = f` names a function from the parent (`&` the controller's resource), and optionally `&Context<{S}>`, to the children it wants: `Vec<{C}>`, `Option<{C}>`, or a `Result` of either; it is a plain `fn`, not an `async fn`: it computes from the cached objects, and waiting belongs in `reconcile`"
)]
pub trait DesiredChildren<S: ControllerSpec, C, Marker, P = <S as ControllerSpec>::Resource> {
    /// The children `parent` wants.
    ///
    /// # Errors
    /// The function's error, or the context not being set yet (outside `into_controller`).
    fn desired(&self, parent: &S::Resource, context: &ContextCell<S>) -> Result<Vec<C>, BoxError>;
}

impl<S, C, F, R> DesiredChildren<S, C, fn(R), S::Resource> for F
where
    S: ControllerSpec,
    F: Fn(&S::Resource) -> R,
    R: IntoChildren<C>,
{
    fn desired(&self, parent: &S::Resource, _context: &ContextCell<S>) -> Result<Vec<C>, BoxError> {
        self(parent).into_children()
    }
}

impl<S, C, F, R> DesiredChildren<S, C, fn(R, S), S::Resource> for F
where
    S: ControllerSpec,
    F: Fn(&S::Resource, &Context<S>) -> R,
    R: IntoChildren<C>,
{
    fn desired(&self, parent: &S::Resource, context: &ContextCell<S>) -> Result<Vec<C>, BoxError> {
        let context = context.get().ok_or(NotBuilt)?;
        self(parent, context).into_children()
    }
}

/// One child, as a report names it: its type, key and (once written) uid.
///
/// ```
/// use informer_core::ObjectKey;
/// use informer_runtime::controller::ChildRef;
///
/// let child = ChildRef {
///     api_version: "v1".into(),
///     kind: "ConfigMap".into(),
///     key: ObjectKey::new(Some("default"), "web-settings"),
///     uid: Some("6f1c".into()),
/// };
/// assert_eq!(child.to_string(), "ConfigMap default/web-settings");
/// let reference = child.object_ref(); // say, an Event's `related`
/// assert_eq!(reference.namespace.as_deref(), Some("default"));
/// assert_eq!(reference.uid.as_deref(), Some("6f1c"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChildRef {
    /// The child's `apiVersion` (`v1`, `apps/v1`).
    pub api_version: String,
    /// The child's kind (`ConfigMap`).
    pub kind: String,
    /// The child's key.
    pub key: ObjectKey,
    /// The child's uid: the one the API server answered a write with, the cached one for
    /// a deletion; `None` where a request failed.
    pub uid: Option<String>,
}

impl ChildRef {
    /// A reference to the child (`apiVersion`, `kind`, namespace, name, uid), as an Event's
    /// `regarding` or `related` names an object.
    pub fn object_ref(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some(self.api_version.clone()),
            kind: Some(self.kind.clone()),
            namespace: self.key.namespace().map(str::to_owned),
            name: Some(self.key.name().to_owned()),
            uid: self.uid.clone(),
            ..ObjectReference::default()
        }
    }
}

impl fmt::Display for ChildRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.key)
    }
}

/// What bringing a parent's children in line did.
///
/// ```
/// use informer_runtime::controller::ChildrenReport;
/// let report = ChildrenReport::default();
/// assert!(report.is_unchanged());
/// assert_eq!(report.to_string(), "no change");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChildrenReport {
    /// Children written that were not in the cache (applied, or for create-only children,
    /// created; one a create found already there counts as unchanged).
    pub created: Vec<ChildRef>,
    /// Children applied because the cached object did not hold what was wanted.
    pub updated: Vec<ChildRef>,
    /// Children deleted: not wanted any more, or their parent is gone.
    pub deleted: Vec<ChildRef>,
    /// Children whose cached object already held what was wanted (not written).
    pub unchanged: usize,
    /// Whether the parent's declared status was written (the cached parent did not hold it).
    /// The status is written after the reconcile succeeded, so this is `false` in the
    /// report the reconcile reads ([`current`](Self::current)); the controller's log line
    /// of the step says it.
    pub status_written: bool,
    /// The declared Namespace children not brought in line (refused, failed): the other
    /// children in them are not written.
    pub(crate) namespaces_not_in_line: Vec<String>,
    /// The declared status was not written: the parent changed since the cache saw it (a
    /// 409). The key is reconciled again after its backoff.
    pub(crate) status_conflict: bool,
}

tokio::task_local! {
    /// The report of the declared children step, while the reconcile after it runs.
    static CURRENT: ChildrenReport;
}

impl ChildrenReport {
    /// What the declared children step did for the key being reconciled, read from inside
    /// the reconcile that runs after it (on the same task): say, to record an Event for
    /// each child created. `None` outside a reconcile, in a task the reconcile spawned, and
    /// for a controller that declares no children. The reconcile runs only when the step
    /// succeeded, so the report is of a step that brought every child in line.
    /// [`Context::children_report`](crate::controller::Context::children_report) is the
    /// same for derived controllers.
    ///
    /// ```
    /// use informer_runtime::controller::ChildrenReport;
    /// assert_eq!(ChildrenReport::current(), None); // not in a reconcile
    /// ```
    pub fn current() -> Option<ChildrenReport> {
        CURRENT.try_with(Clone::clone).ok()
    }

    /// Whether nothing was written.
    pub fn is_unchanged(&self) -> bool {
        self.created.is_empty()
            && self.updated.is_empty()
            && self.deleted.is_empty()
            && !self.status_written
    }
}

impl fmt::Display for ChildrenReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_unchanged() {
            return f.write_str("no change");
        }
        let mut parts = Vec::new();
        for (verb, children) in [
            ("created", &self.created),
            ("updated", &self.updated),
            ("deleted", &self.deleted),
        ] {
            if !children.is_empty() {
                let names: Vec<String> = children.iter().map(ToString::to_string).collect();
                parts.push(format!("{verb} {}", names.join(", ")));
            }
        }
        if self.status_written {
            parts.push("status written".to_owned());
        }
        f.write_str(&parts.join("; "))
    }
}

/// Children could not be brought in line. As a [`ReconcileError`]
/// ([`into_reconcile_error`](Self::into_reconcile_error)): a mistake in what the controller
/// declares is terminal (retrying cannot fix it; the parent waits for its next change), a
/// failed request is transient.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChildrenError {
    /// The function computing the children failed.
    #[error("computing the {kind} children failed: {source}")]
    Desired {
        /// The children's kind.
        kind: String,
        /// The function's error.
        source: BoxError,
    },
    /// A child has no `metadata.name` (server-side apply needs one; `generateName` cannot be
    /// used for children).
    #[error("a {kind} child has no metadata.name: give every child a name")]
    NoName {
        /// The child's kind.
        kind: String,
    },
    /// A namespaced child of a cluster-scoped parent names no namespace, and its children
    /// are watched in every namespace.
    #[error(
        "{kind} child {name:?} needs a namespace: set metadata.namespace, or watch the children in one namespace"
    )]
    NoNamespace {
        /// The child's kind.
        kind: String,
        /// The child's name.
        name: String,
    },
    /// Two children have the same namespace and name.
    #[error("{kind} child {key} is wanted twice: give each child its own name")]
    Twice {
        /// The children's kind.
        kind: String,
        /// The key they share.
        key: ObjectKey,
    },
    /// A child is outside the namespace its type's children are watched in: the controller
    /// would never see it, so it could never update or delete it.
    #[error(
        "{kind} child {key} is outside namespace {watched:?}, where the controller watches its {kind} children: put it there, or watch them in its namespace (or in all)"
    )]
    OutsideWatch {
        /// The child's kind.
        kind: String,
        /// The child's key.
        key: ObjectKey,
        /// The namespace children are watched in.
        watched: String,
    },
    /// A child already has another controlling owner reference.
    #[error(
        "{kind} child {key} names another controlling owner in its ownerReferences: remove it (the controller adds its own)"
    )]
    ControllerTaken {
        /// The child's kind.
        kind: String,
        /// The child's key.
        key: ObjectKey,
    },
    /// A child's namespace and name are taken by an object this controller did not make
    /// (it does not carry the controller's marks, nor a controlling owner reference to the
    /// parent): it is left alone, never taken over, until it is deleted or the child is given
    /// another name. A Warning Event on the parent says so too (reason `ErrResourceExists`).
    #[error(
        "{child} exists and {}: delete it, give the child another name, or, to make it this parent's child, give it a controlling owner reference to the parent (a controller takes over no other object); retried every {}s",
        taken_by(controller.as_deref()),
        TAKEN_RETRY.as_secs()
    )]
    Exists {
        /// The child (boxed: it keeps the error small).
        child: Box<ChildRef>,
        /// Its controlling owner (`Kind/name`), if it has one.
        controller: Option<String>,
    },
    /// A child is also wanted by another parent of this controller (which still exists).
    #[error("{child} is already a child of {parent}: give each parent's children their own names")]
    OtherParent {
        /// The child (boxed: it keeps the error small).
        child: Box<ChildRef>,
        /// Its parent.
        parent: ObjectKey,
    },
    /// The parent has no UID to put in owner references (objects from a memory source
    /// rarely do; the API server always sets one).
    #[error(
        "parent {parent} has no metadata.uid to own children with (a view as the parent keeps uid in #[view(metadata(...))])"
    )]
    ParentWithoutUid {
        /// The parent.
        parent: ObjectKey,
    },
    /// A child could not be serialized, or is not a JSON object.
    #[error("a {kind} child cannot be serialized: {source}")]
    Serialize {
        /// The child's kind.
        kind: String,
        /// The serializer's error.
        source: serde_json::Error,
    },
    /// A child does not serialize to a JSON object.
    #[error("a {kind} child does not serialize to a JSON object with an object metadata")]
    NotAnObject {
        /// The child's kind.
        kind: String,
    },
    /// The function computing the parent's status failed, or its result does not serialize.
    #[error("computing the status of {parent} failed: {source}")]
    Status {
        /// The parent.
        parent: ObjectKey,
        /// The function's error.
        source: BoxError,
    },
    /// Writing the parent's status failed.
    #[error("writing the status of {parent} failed: {}", brief(source))]
    StatusWrite {
        /// The parent.
        parent: ObjectKey,
        /// The API's error.
        source: kube::Error,
    },
    /// The parent's resource has no status subresource: the API server answered 404 to a
    /// write of its status while the parent exists.
    #[error(
        "{parent} has no status subresource to write its status to (the API server answers 404): add `subresources: {{status: {{}}}}` to each version of the {kind} CustomResourceDefinition (kube's derive: `#[kube(status = \"...\")]`)"
    )]
    NoStatusSubresource {
        /// The parent.
        parent: ObjectKey,
        /// The parent's kind.
        kind: String,
    },
    /// The controller has no client (its factory was made without one).
    #[error("children cannot be written: this controller has no Kubernetes client")]
    NoClient,
    /// Applying a child failed.
    #[error("applying {child} failed: {}", brief(source))]
    Apply {
        /// The child (boxed: it keeps the error small).
        child: Box<ChildRef>,
        /// The API's error.
        source: kube::Error,
    },
    /// Reading what has a child's name, before creating it, failed (the controller needs
    /// `get` on the child type).
    #[error("reading {child} before creating it failed: {}", brief(source))]
    Read {
        /// The child (boxed: it keeps the error small).
        child: Box<ChildRef>,
        /// The API's error.
        source: kube::Error,
    },
    /// Deleting a child failed.
    #[error("deleting {child} failed: {}", brief(source))]
    Delete {
        /// The child (boxed: it keeps the error small).
        child: Box<ChildRef>,
        /// The API's error.
        source: kube::Error,
    },
    /// Reading the parent from the API server, to check it still exists before a child is
    /// created, failed.
    #[error(
        "reading {parent} before creating its children failed: {}",
        brief(source)
    )]
    ParentRead {
        /// The parent.
        parent: ObjectKey,
        /// The API's error.
        source: kube::Error,
    },
}

/// How soon a reconcile whose child's name is taken ([`ChildrenError::Exists`],
/// [`ChildrenError::OtherParent`]) is tried again, at most: the object in the way is not
/// watched (it is not the controller's), so its deletion, or the owner reference that makes
/// it the parent's, is found by this retry rather than by the rate limiter's backoff, which
/// grows to minutes.
pub const TAKEN_RETRY: std::time::Duration = std::time::Duration::from_secs(15);

/// Who holds an object a child's name is taken by, in [`ChildrenError::Exists`]'s words.
fn taken_by(controller: Option<&str>) -> String {
    match controller {
        Some(controller) => format!("is controlled by {controller}, not by this parent"),
        None => "was not made by this controller".to_owned(),
    }
}

impl ChildrenError {
    /// Whether retrying can help: failed requests and failed computations can, mistakes in
    /// what is declared cannot.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ChildrenError::Desired { source, .. } => match source.downcast_ref::<KindedError>() {
                Some(kinded) => kinded.kind(),
                None => ErrorKind::Transient,
            },
            ChildrenError::Status { .. }
            | ChildrenError::StatusWrite { .. }
            | ChildrenError::NoClient
            | ChildrenError::Apply { .. }
            | ChildrenError::Delete { .. }
            | ChildrenError::Read { .. }
            | ChildrenError::ParentRead { .. }
            | ChildrenError::OtherParent { .. }
            | ChildrenError::Exists { .. } => ErrorKind::Transient,
            _ => ErrorKind::Terminal,
        }
    }
}

impl ChildrenError {
    /// The reconcile error this makes, of this error's [`kind`](Self::kind) (the blanket
    /// `From` of [`ReconcileError`] would make every error transient).
    pub fn into_reconcile_error(self) -> ReconcileError {
        match self.kind() {
            ErrorKind::Terminal => ReconcileError::terminal(self),
            _ => ReconcileError::transient(self),
        }
    }
}

/// A reconciler that checks a live object, puts the controller's finalizer on it, brings
/// declared children in line, calls the user's reconcile, then, if it succeeded, writes the
/// declared status. An object being deleted that carries the finalizer gets its children in
/// other namespaces deleted, then the user's cleanup, then loses the finalizer.
pub(crate) struct WithChildren<P, R> {
    pub(crate) controller: Arc<str>,
    /// Runs first for a live object ([`ControllerBuilder::validate`](super::ControllerBuilder::validate)).
    pub(crate) validate: Option<ValidateFn<P>>,
    /// The controller's own finalizer ([`ControllerBuilder::finalizer`](super::ControllerBuilder::finalizer)).
    pub(crate) finalizer: Option<Arc<dyn OwnFinalizer<P>>>,
    pub(crate) children: Vec<Arc<dyn SyncChildren<P>>>,
    pub(crate) inner: R,
}

/// A controller's check of a live object before its children and reconcile.
pub(crate) type ValidateFn<P> = Arc<dyn Fn(&P) -> Result<(), ReconcileError> + Send + Sync>;

/// What a reconcile of [`WithChildren`] does with its object.
enum Step<P> {
    /// A live object, or none: children, reconcile, status.
    Reconcile(Option<Arc<P>>),
    /// Being deleted with the controller's finalizer: children, cleanup, finalizer removed.
    Cleanup(Arc<P>),
}

#[async_trait::async_trait]
impl<P, R> KeyReconciler<P> for WithChildren<P, R>
where
    P: kube::Resource + Send + Sync + 'static,
    R: KeyReconciler<P>,
{
    async fn reconcile(
        &self,
        key: &ObjectKey,
        obj: Option<Arc<P>>,
    ) -> Result<Action, ReconcileError> {
        let Some(step) = self.step(key, obj).await? else {
            return Ok(Action::Done);
        };
        let parent = match &step {
            Step::Reconcile(obj) => obj.as_deref(),
            Step::Cleanup(object) => Some(&**object),
        };
        let mut report = ChildrenReport::default();
        let mut first_error: Option<ChildrenError> = None;
        for set in self.children.iter().filter(|set| !set.after_reconcile()) {
            if let Err(error) = set.sync(key, parent, &mut report).await {
                // The reconcile fails with the first child type's error (in declaration
                // order), unless it is terminal and a later one is transient: then with the
                // transient one, so that the key is retried (a terminal error is not, and
                // the transient failure would wait for the parent's next change). The
                // others are logged, not lost.
                let (kept, other) = match first_error.take() {
                    None => (error, None),
                    Some(first)
                        if first.kind() == ErrorKind::Terminal
                            && error.kind() == ErrorKind::Transient =>
                    {
                        (error, Some(first))
                    }
                    Some(first) => (first, Some(error)),
                };
                if let Some(other) = other {
                    tracing::warn!(controller = %self.controller, %key, error = %other, "another child type failed too");
                    crate::fallback::report(format_args!(
                        "controller {}: reconcile of {key}: another child type failed too: {other}",
                        self.controller
                    ));
                }
                first_error = Some(kept);
            }
        }
        let result = match (first_error, step) {
            (Some(error), _) => Err(error.into_reconcile_error()),
            (None, Step::Reconcile(obj)) => {
                let reconciled =
                    CURRENT.scope(report.clone(), self.inner.reconcile(key, obj.clone()));
                match reconciled.await {
                    // The declared status, once the children are in line and the reconcile
                    // succeeded (java-operator-sdk's order); after a failure, `on_error`
                    // reports it.
                    Ok(action) => self
                        .after(key, obj.as_deref(), &mut report)
                        .await
                        .map(|()| match action {
                            // A status computed from an old version: again, after the
                            // backoff (the newer version's event may not pass the filters).
                            _ if report.status_conflict => Action::Requeue,
                            action => action,
                        }),
                    Err(error) => Err(error),
                }
            }
            (None, Step::Cleanup(object)) => {
                let cleaned =
                    CURRENT.scope(report.clone(), self.inner.cleanup(key, object.clone()));
                match cleaned.await {
                    Ok(Action::Done) => {
                        if let Some(finalizer) = &self.finalizer {
                            finalizer.remove(key, &object).await?;
                            tracing::debug!(controller = %self.controller, %key, finalizer = finalizer.name(), "cleaned up; finalizer removed");
                        }
                        Ok(Action::Done)
                    }
                    // Not finished: the finalizer stays, the cleanup runs again.
                    other => other,
                }
            }
        };
        if !report.is_unchanged() {
            tracing::info!(controller = %self.controller, %key, "{report}");
        }
        result
    }

    async fn on_error(
        &self,
        key: &ObjectKey,
        obj: Option<Arc<P>>,
        error: &ReconcileError,
    ) -> Action {
        let action = self.inner.on_error(key, obj, error).await;
        let taken = matches!(
            error.as_error().downcast_ref::<ChildrenError>(),
            Some(ChildrenError::Exists { .. } | ChildrenError::OtherParent { .. })
        );
        match action {
            // The object in the way is not watched: look again soon, not after a backoff.
            Action::Requeue if taken => Action::RequeueAfter(TAKEN_RETRY),
            Action::RequeueAfter(delay) if taken => Action::RequeueAfter(delay.min(TAKEN_RETRY)),
            action => action,
        }
    }
}

impl<P, R> WithChildren<P, R> {
    /// Runs the sets that come after a successful reconcile (the declared status).
    async fn after(
        &self,
        key: &ObjectKey,
        obj: Option<&P>,
        report: &mut ChildrenReport,
    ) -> Result<(), ReconcileError> {
        for set in self.children.iter().filter(|set| set.after_reconcile()) {
            set.sync(key, obj, report)
                .await
                .map_err(ChildrenError::into_reconcile_error)?;
        }
        Ok(())
    }
}

impl<P, R> WithChildren<P, R>
where
    P: kube::Resource + Send + Sync + 'static,
    R: KeyReconciler<P>,
{
    /// What the reconcile of `key` does with `obj`; `None`: nothing (the object is gone
    /// from the API server though the cache holds it).
    async fn step(
        &self,
        key: &ObjectKey,
        obj: Option<Arc<P>>,
    ) -> Result<Option<Step<P>>, ReconcileError> {
        let Some(mut object) = obj else {
            return Ok(Some(Step::Reconcile(None)));
        };
        let ours = |object: &P| {
            self.finalizer
                .as_ref()
                .is_some_and(|finalizer| carries(object, finalizer.name()))
        };
        if object.meta().deletion_timestamp.is_none()
            && let Some(finalizer) = self.finalizer.as_ref().filter(|_| ours(&object))
        {
            // The cache says it lives and has the finalizer: the API server says so too
            // before anything is written for it, outside the cluster above all. A cache can
            // go back in time (a restart against a lagging API server lists an object whose
            // cleanup ran, finalizer removed, and which is gone): an outside write for it
            // would never be cleaned up.
            match finalizer.live(key, &object).await? {
                Some(live) => object = live,
                // Gone, or made again: the cache's next events say so.
                None => return Ok(None),
            }
        }
        if object.meta().deletion_timestamp.is_some() {
            // With the finalizer, cleaned up (the cache may have been behind); without it
            // (none, or removed by hand), as without a finalizer. Not validated, so that
            // its cleanup goes on.
            return Ok(Some(match ours(&object) {
                true => Step::Cleanup(object),
                false => Step::Reconcile(Some(object)),
            }));
        }
        if let Some(validate) = &self.validate {
            // Nothing is written for a live object that cannot be served.
            validate(&object)?;
        }
        match &self.finalizer {
            Some(finalizer) if !ours(&object) => Ok(finalizer
                .add(key, object)
                .await?
                // `None`: gone meanwhile, its deletion is the next event of the key.
                .map(|object| Step::Reconcile(Some(object)))),
            _ => Ok(Some(Step::Reconcile(Some(object)))),
        }
    }
}

/// Whether `object` carries the finalizer `name`.
fn carries<P: kube::Resource>(object: &P, name: &str) -> bool {
    object.finalizers().iter().any(|f| f == name)
}

/// The reconciler of a controller whose work is all in its declared children.
pub(crate) struct NoReconcile;

#[async_trait::async_trait]
impl<P: Send + Sync + 'static> KeyReconciler<P> for NoReconcile {
    async fn reconcile(
        &self,
        _key: &ObjectKey,
        _obj: Option<Arc<P>>,
    ) -> Result<Action, ReconcileError> {
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests;
