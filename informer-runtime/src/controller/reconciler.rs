//! [`KeyReconciler`]: what a controller calls for each key, and what it answers ([`Action`],
//! [`ReconcileError`]).

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use informer_core::ObjectKey;

use crate::api_error::brief;

/// Brings the cluster in line with one object: the user's logic, as
/// [`ControllerBuilder::build`](super::ControllerBuilder::build) takes it (a key and its
/// cached object; no context). Not to be confused with [`Reconcile`](super::Reconcile), what
/// a `#[derive(ControllerSpec)]` struct implements (it also gets the controller's context).
///
/// The runner calls [`reconcile`](KeyReconciler::reconcile) with the key taken from the queue and
/// the object the cache holds for it right then (`None`: it is gone, or was never seen).
/// Reconcile should be level-based: read the desired state from `obj` (or the listers), act,
/// and return; it must be idempotent, because a key can be reconciled again at any time
/// (resyncs, restarts, a change of leader).
///
/// What the runner guarantees to a reconciler:
/// - **One at a time per key.** The same key is never reconciled by two workers at once.
/// - **Latest state.** `obj` is read from the cache when the worker takes the key, so changes
///   made while the key waited are seen; changes made *during* a reconcile queue the key
///   again, and it is reconciled once more after this call returns.
/// - **Answers are acted on** (the user cannot get them wrong):
///
/// | returned | the runner |
/// | --- | --- |
/// | `Ok(Action::Done)` | forgets the key's backoff |
/// | `Ok(Action::RequeueAfter(d))` | forgets the backoff and queues the key again after `d` |
/// | `Ok(Action::Requeue)` | queues the key again after its rate-limited backoff, which it keeps (not an error) |
/// | `Err(e)`, [transient](ReconcileError::transient) | queues the key again after its rate-limited backoff |
/// | `Err(e)`, [terminal](ReconcileError::terminal) | logs and counts it, forgets the backoff, does not retry |
/// | a panic, or the [timeout](crate::controller::ControllerBuilder::timeout) passed | as a transient error (also logged and counted) |
///
/// Not guaranteed: that every intermediate state of an object is seen (keys are
/// deduplicated), nor that a reconcile runs to its end (on shutdown past the deadline, on a
/// timeout, or when a replica loses its lease or shard, the future is dropped).
///
/// The trait is dyn-compatible (`Arc<dyn KeyReconciler<K>>`); [`reconciler_fn`] makes one from
/// an async closure. Implement it with [`async_trait`](https://docs.rs/async-trait):
///
/// ```
/// use std::sync::Arc;
/// use informer_core::ObjectKey;
/// use informer_runtime::controller::{Action, ReconcileError, KeyReconciler};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// struct Audit;
///
/// #[async_trait::async_trait]
/// impl KeyReconciler<ConfigMap> for Audit {
///     async fn reconcile(&self, key: &ObjectKey, obj: Option<Arc<ConfigMap>>) -> Result<Action, ReconcileError> {
///         match obj {
///             Some(cm) => println!("{key} has {} entries", cm.data.as_ref().map_or(0, |d| d.len())),
///             None => println!("{key} is gone"),
///         }
///         Ok(Action::Done)
///     }
/// }
///
/// let reconciler: Arc<dyn KeyReconciler<ConfigMap>> = Arc::new(Audit);
/// # let _ = reconciler;
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a reconciler of `{K}` keys",
    label = "expected a `KeyReconciler<{K}>`",
    note = "give `build` a `reconciler_fn(|key, obj: Option<Arc<{K}>>| async move {{ .. }})`, or a type implementing `KeyReconciler<{K}>`; a `#[derive(ControllerSpec)]` struct implements `Reconcile` and runs with `.run(client)`"
)]
#[async_trait]
pub trait KeyReconciler<K>: Send + Sync {
    /// Reconciles `key`; `obj` is the cached object, `None` if the cache has none.
    ///
    /// # Errors
    /// A [`ReconcileError`]: transient ones are retried with backoff, terminal ones are not.
    async fn reconcile(
        &self,
        key: &ObjectKey,
        obj: Option<Arc<K>>,
    ) -> Result<Action, ReconcileError>;

    /// Decides what happens to `key` after [`reconcile`](Self::reconcile) returned `error`
    /// (kube-runtime's `error_policy`; java-operator-sdk's `updateErrorStatus` when it also
    /// writes the error into the object's status). `obj` is the object the failed reconcile
    /// was given. Provided: [`ReconcileError::default_action`], a transient error retried
    /// after the key's backoff, a terminal one not retried.
    ///
    /// The answer: [`Action::Requeue`] retries after the key's backoff (one step longer each
    /// time), [`Action::RequeueAfter`] after that delay instead (the backoff is neither
    /// grown nor forgotten: the queue's `num_requeues` counts `Requeue`s only),
    /// [`Action::Done`] not at all (the key waits for its next change). The error is logged
    /// and counted whatever the answer. A backoff that grows from a base of your own (5 s
    /// doubling to 5 min, say) is `Action::Requeue` over a queue whose rate limiter starts
    /// there: [`ControllerBuilder::queue`](super::ControllerBuilder::queue), or the derive's
    /// `queue = f`, with a `WorkQueue` built with
    /// [`ItemExponentialFailureRateLimiter::new`](informer_core::queue::ItemExponentialFailureRateLimiter::new)`(base, max)`.
    ///
    /// It runs on the reconcile's worker, within the reconcile's timeout and cancellation,
    /// and its writes through the controller's client count as the key's own writes (for
    /// read-your-own-writes). Not called for a reconcile that panicked or timed out: those
    /// are retried after the backoff.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use informer_core::ObjectKey;
    /// use informer_runtime::controller::{Action, KeyReconciler, ReconcileError};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// struct Poller;
    ///
    /// #[async_trait::async_trait]
    /// impl KeyReconciler<ConfigMap> for Poller {
    ///     async fn reconcile(&self, _key: &ObjectKey, _obj: Option<Arc<ConfigMap>>) -> Result<Action, ReconcileError> {
    ///         Err(ReconcileError::transient("the upstream service is down"))
    ///     }
    ///
    ///     async fn on_error(&self, _key: &ObjectKey, _obj: Option<Arc<ConfigMap>>, error: &ReconcileError) -> Action {
    ///         // A fixed retry interval, as kube-runtime's error policies often have.
    ///         if error.is_terminal() { Action::Done } else { Action::requeue_after(Duration::from_secs(5)) }
    ///     }
    /// }
    /// # let _: Arc<dyn KeyReconciler<ConfigMap>> = Arc::new(Poller);
    /// ```
    async fn on_error(&self, key: &ObjectKey, obj: Option<Arc<K>>, error: &ReconcileError) -> Action
    where
        K: Send + Sync + 'static,
    {
        let _ = (key, obj);
        error.default_action()
    }

    /// Cleans up after `obj`, which is being deleted and still carries the controller's own
    /// finalizer ([`ControllerBuilder::finalizer`](super::ControllerBuilder::finalizer)):
    /// release what it holds that no owner reference cleans up (state outside the cluster,
    /// objects a declared child's owner reference cannot reach). Runs instead of
    /// [`reconcile`](Self::reconcile), after the declared children in other namespaces were
    /// deleted. Provided: nothing to clean up. Never called for a controller without a
    /// finalizer: an object without one is gone before any controller can see it being
    /// deleted.
    ///
    /// The answer decides the finalizer: [`Action::Done`] removes it, which lets the API
    /// server delete the object; [`Action::RequeueAfter`] or [`Action::Requeue`] keep it
    /// and run the cleanup again after the delay or the backoff (java-operator-sdk's
    /// `DeleteControl.noFinalizerRemoval().rescheduleAfter(..)`: an outside deletion still
    /// in progress); an error keeps it and goes to [`on_error`](Self::on_error). The cleanup
    /// may run again for one deletion (a crash before the removal): make it idempotent.
    ///
    /// # Errors
    /// A [`ReconcileError`], as from [`reconcile`](Self::reconcile).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::ObjectKey;
    /// use informer_runtime::controller::{Action, KeyReconciler, ReconcileError};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// struct Mirror;
    ///
    /// #[async_trait::async_trait]
    /// impl KeyReconciler<ConfigMap> for Mirror {
    ///     async fn reconcile(&self, _key: &ObjectKey, _cm: Option<Arc<ConfigMap>>) -> Result<Action, ReconcileError> {
    ///         // Copy the ConfigMap to the outside store.
    ///         Ok(Action::Done)
    ///     }
    ///
    ///     async fn cleanup(&self, key: &ObjectKey, _cm: Arc<ConfigMap>) -> Result<Action, ReconcileError> {
    ///         // Delete the outside copy; the finalizer goes when this returns `Done`.
    ///         tracing::info!(%key, "outside copy deleted");
    ///         Ok(Action::Done)
    ///     }
    /// }
    /// # let _: Arc<dyn KeyReconciler<ConfigMap>> = Arc::new(Mirror);
    /// ```
    async fn cleanup(&self, key: &ObjectKey, obj: Arc<K>) -> Result<Action, ReconcileError>
    where
        K: Send + Sync + 'static,
    {
        let _ = (key, obj);
        Ok(Action::Done)
    }
}

#[async_trait]
impl<K, R> KeyReconciler<K> for Arc<R>
where
    K: Send + Sync + 'static,
    R: KeyReconciler<K> + ?Sized,
{
    async fn reconcile(
        &self,
        key: &ObjectKey,
        obj: Option<Arc<K>>,
    ) -> Result<Action, ReconcileError> {
        (**self).reconcile(key, obj).await
    }
    async fn on_error(
        &self,
        key: &ObjectKey,
        obj: Option<Arc<K>>,
        error: &ReconcileError,
    ) -> Action {
        (**self).on_error(key, obj, error).await
    }
    async fn cleanup(&self, key: &ObjectKey, obj: Arc<K>) -> Result<Action, ReconcileError> {
        (**self).cleanup(key, obj).await
    }
}

#[async_trait]
impl<K, R> KeyReconciler<K> for Box<R>
where
    K: Send + Sync + 'static,
    R: KeyReconciler<K> + ?Sized,
{
    async fn reconcile(
        &self,
        key: &ObjectKey,
        obj: Option<Arc<K>>,
    ) -> Result<Action, ReconcileError> {
        (**self).reconcile(key, obj).await
    }
    async fn on_error(
        &self,
        key: &ObjectKey,
        obj: Option<Arc<K>>,
        error: &ReconcileError,
    ) -> Action {
        (**self).on_error(key, obj, error).await
    }
    async fn cleanup(&self, key: &ObjectKey, obj: Arc<K>) -> Result<Action, ReconcileError> {
        (**self).cleanup(key, obj).await
    }
}

/// The old name of [`KeyReconciler`], too close to [`Reconcile`](super::Reconcile). Kept so
/// that code naming it is told the new name; implement [`KeyReconciler`].
#[deprecated(
    since = "0.1.0",
    note = "renamed `KeyReconciler` (the builder's reconciler: a key and its object, no context); not to be confused with `Reconcile`, what a `#[derive(ControllerSpec)]` struct implements"
)]
pub trait Reconciler<K> {}

/// A [`KeyReconciler`] made from a closure returning a future; see [`reconciler_fn`].
#[derive(Clone)]
pub struct ReconcilerFn<F, P = DefaultErrorPolicy, C = NoCleanup> {
    f: F,
    policy: P,
    cleanup: C,
}

/// The cleanup of a [`reconciler_fn`] without one: nothing to clean up
/// ([`KeyReconciler::cleanup`]'s default).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCleanup;

/// The error policy of a [`reconciler_fn`] without one: [`ReconcileError::default_action`].
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultErrorPolicy;

impl<F, C> ReconcilerFn<F, DefaultErrorPolicy, C> {
    /// Adds an error policy (kube-runtime's `error_policy`): called after a failed
    /// reconcile, with the key, the object the reconcile was given and the error, it
    /// answers what happens to the key (see [`KeyReconciler::on_error`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use informer_runtime::controller::{Action, KeyReconciler, ReconcileError, reconciler_fn};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let reconciler = reconciler_fn(|_key, _pod: Option<Arc<Pod>>| async {
    ///     Err::<Action, _>(ReconcileError::transient("not yet"))
    /// })
    /// .error_policy(|_key, _pod: Option<Arc<Pod>>, error: &ReconcileError| {
    ///     tracing::warn!(%error, "reconcile failed");
    ///     Action::requeue_after(Duration::from_secs(5))
    /// });
    /// let _: Arc<dyn KeyReconciler<Pod>> = Arc::new(reconciler);
    /// ```
    pub fn error_policy<K, P>(self, policy: P) -> ReconcilerFn<F, P, C>
    where
        P: Fn(&ObjectKey, Option<Arc<K>>, &ReconcileError) -> Action + Send + Sync,
    {
        ReconcilerFn {
            f: self.f,
            policy,
            cleanup: self.cleanup,
        }
    }
}

impl<F, P> ReconcilerFn<F, P, NoCleanup> {
    /// Adds a cleanup: for an object being deleted that still carries the controller's
    /// finalizer ([`ControllerBuilder::finalizer`](super::ControllerBuilder::finalizer)),
    /// called with its key and the object instead of the reconcile; [`Action::Done`]
    /// removes the finalizer (see [`KeyReconciler::cleanup`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_runtime::controller::{Action, KeyReconciler, ReconcileError, reconciler_fn};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let reconciler = reconciler_fn(|_key, _cm: Option<Arc<ConfigMap>>| async {
    ///     Ok::<_, ReconcileError>(Action::Done)
    /// })
    /// .cleanup(|key, _cm: Arc<ConfigMap>| async move {
    ///     tracing::info!(%key, "outside copy deleted");
    ///     Ok(Action::Done)
    /// });
    /// let _: Arc<dyn KeyReconciler<ConfigMap>> = Arc::new(reconciler);
    /// ```
    pub fn cleanup<K, C, Fut>(self, cleanup: C) -> ReconcilerFn<F, P, C>
    where
        C: Fn(ObjectKey, Arc<K>) -> Fut + Send + Sync,
        Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
    {
        ReconcilerFn {
            f: self.f,
            policy: self.policy,
            cleanup,
        }
    }
}

impl<F, P, C> fmt::Debug for ReconcilerFn<F, P, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReconcilerFn").finish_non_exhaustive()
    }
}

/// Makes a [`KeyReconciler`] from a closure `|key, obj| async move { ... }`.
///
/// The closure gets the key by value (an [`ObjectKey`] is a cheap clone) so that the future
/// it returns owns everything it uses; clone whatever shared context it needs into the
/// future.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use informer_runtime::controller::{Action, ReconcileError, KeyReconciler, reconciler_fn};
/// use k8s_openapi::api::core::v1::Pod;
///
/// let seen = Arc::new(AtomicUsize::new(0));
/// let reconciler = reconciler_fn(move |key, pod: Option<Arc<Pod>>| {
///     let seen = seen.clone();
///     async move {
///         seen.fetch_add(1, Ordering::Relaxed);
///         tracing::info!(%key, exists = pod.is_some(), "reconciled");
///         // Passed to `ControllerBuilder::build`, the error type is inferred; alone, name it.
///         Ok::<_, ReconcileError>(Action::Done)
///     }
/// });
/// let _: Arc<dyn KeyReconciler<Pod>> = Arc::new(reconciler);
/// ```
pub fn reconciler_fn<K, F, Fut>(f: F) -> ReconcilerFn<F>
where
    F: Fn(ObjectKey, Option<Arc<K>>) -> Fut,
{
    ReconcilerFn {
        f,
        policy: DefaultErrorPolicy,
        cleanup: NoCleanup,
    }
}

#[async_trait]
impl<K, F, Fut, P, C> KeyReconciler<K> for ReconcilerFn<F, P, C>
where
    K: Send + Sync + 'static,
    F: Fn(ObjectKey, Option<Arc<K>>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
    P: ErrorPolicy<K>,
    C: CleanupFn<K>,
{
    async fn reconcile(
        &self,
        key: &ObjectKey,
        obj: Option<Arc<K>>,
    ) -> Result<Action, ReconcileError> {
        (self.f)(key.clone(), obj).await
    }

    async fn on_error(
        &self,
        key: &ObjectKey,
        obj: Option<Arc<K>>,
        error: &ReconcileError,
    ) -> Action {
        self.policy.decide(key, obj, error)
    }

    async fn cleanup(&self, key: &ObjectKey, obj: Arc<K>) -> Result<Action, ReconcileError> {
        self.cleanup.cleanup(key, obj).await
    }
}

/// What [`ReconcilerFn::cleanup`] takes: `Fn(ObjectKey, Arc<K>) -> impl Future<Output =
/// Result<Action, ReconcileError>>` (or [`NoCleanup`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a cleanup of `{K}` objects",
    label = "expected `Fn(ObjectKey, Arc<{K}>) -> impl Future<Output = Result<Action, ReconcileError>>`",
    note = "write `.cleanup(|key: ObjectKey, obj: Arc<{K}>| async move {{ Ok(Action::Done) }})`"
)]
pub trait CleanupFn<K>: Send + Sync {
    /// Cleans up after `obj`, being deleted (see [`KeyReconciler::cleanup`]).
    fn cleanup(
        &self,
        key: &ObjectKey,
        obj: Arc<K>,
    ) -> futures::future::BoxFuture<'static, Result<Action, ReconcileError>>;
}

impl<K> CleanupFn<K> for NoCleanup {
    fn cleanup(
        &self,
        _key: &ObjectKey,
        _obj: Arc<K>,
    ) -> futures::future::BoxFuture<'static, Result<Action, ReconcileError>> {
        Box::pin(async { Ok(Action::Done) })
    }
}

impl<K, C, Fut> CleanupFn<K> for C
where
    C: Fn(ObjectKey, Arc<K>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
{
    fn cleanup(
        &self,
        key: &ObjectKey,
        obj: Arc<K>,
    ) -> futures::future::BoxFuture<'static, Result<Action, ReconcileError>> {
        Box::pin(self(key.clone(), obj))
    }
}

/// What [`ReconcilerFn::error_policy`] takes: `Fn(&ObjectKey, Option<Arc<K>>,
/// &ReconcileError) -> Action` (or [`DefaultErrorPolicy`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an error policy for `{K}`",
    label = "expected `Fn(&ObjectKey, Option<Arc<{K}>>, &ReconcileError) -> Action`",
    note = "write `.error_policy(|key: &ObjectKey, obj: Option<Arc<{K}>>, error: &ReconcileError| Action::requeue_after(Duration::from_secs(5)))`"
)]
pub trait ErrorPolicy<K>: Send + Sync {
    /// What happens to `key` after its reconcile failed with `error`.
    fn decide(&self, key: &ObjectKey, obj: Option<Arc<K>>, error: &ReconcileError) -> Action;
}

impl<K> ErrorPolicy<K> for DefaultErrorPolicy {
    fn decide(&self, _key: &ObjectKey, _obj: Option<Arc<K>>, error: &ReconcileError) -> Action {
        error.default_action()
    }
}

impl<K, P> ErrorPolicy<K> for P
where
    P: Fn(&ObjectKey, Option<Arc<K>>, &ReconcileError) -> Action + Send + Sync,
{
    fn decide(&self, key: &ObjectKey, obj: Option<Arc<K>>, error: &ReconcileError) -> Action {
        self(key, obj, error)
    }
}

/// What to do with a key after a successful reconcile.
///
/// The three answers are controller-runtime's `reconcile.Result`s, acted on the same way and
/// counted under the same `controller_runtime_reconcile_total{result}` label:
///
/// | `Action` | controller-runtime | the key's backoff | queued again | `result` |
/// | --- | --- | --- | --- | --- |
/// | [`Done`](Action::Done) | `Result{}` | forgotten | on its next change | `success` |
/// | [`RequeueAfter(d)`](Action::RequeueAfter) | `Result{RequeueAfter: d}` | forgotten | after `d` | `requeue_after` |
/// | [`Requeue`](Action::Requeue) | `Result{Requeue: true}` | kept, one step longer | after the backoff | `requeue` |
///
/// ```
/// use std::time::Duration;
/// use informer_runtime::controller::Action;
///
/// assert_eq!(Action::done(), Action::Done);
/// assert_eq!(Action::requeue_after(Duration::from_secs(30)).requeue_delay(), Some(Duration::from_secs(30)));
/// assert_eq!(Action::requeue(Duration::from_secs(30)), Action::RequeueAfter(Duration::from_secs(30)));
/// assert_eq!(Action::requeue_rate_limited(), Action::Requeue);
/// assert_eq!(Action::default(), Action::Done);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Action {
    /// Nothing more to do until the object (or something mapped to it) changes. The key's
    /// backoff is forgotten.
    #[default]
    Done,
    /// Reconcile again after this delay (say, to poll an external system), even if nothing
    /// changes. The key's backoff is forgotten. If the key is queued again sooner (a change),
    /// the earlier time wins. A zero delay queues the key again at once.
    RequeueAfter(Duration),
    /// Reconcile again after the key's rate-limited backoff (the queue's `add_rate_limited`,
    /// as for a transient error), without counting an error: controller-runtime's
    /// `Result{Requeue: true}`. The backoff is **not** forgotten, so a key that keeps asking
    /// waits longer each time (with the default limiter: 5 ms, 10 ms, 20 ms, ... up to
    /// 1000 s), until a [`Done`](Action::Done) or [`RequeueAfter`](Action::RequeueAfter)
    /// forgets it.
    ///
    /// For waiting on something outside the cluster, prefer
    /// [`RequeueAfter`](Action::RequeueAfter) with the time it should take or a poll
    /// interval: controller-runtime deprecated `Requeue` for that reason, since a backoff
    /// meant for failures is not a polling schedule.
    Requeue,
}

impl Action {
    /// [`Action::Done`].
    ///
    /// ```
    /// # use informer_runtime::controller::{Action, ErrorKind, ReconcileError};
    /// assert_eq!(Action::done(), Action::Done);
    /// ```
    pub fn done() -> Self {
        Action::Done
    }

    /// [`Action::Done`], by kube-runtime's name: wait for the next change.
    ///
    /// ```
    /// # use informer_runtime::controller::Action;
    /// assert_eq!(Action::await_change(), Action::Done);
    /// ```
    pub fn await_change() -> Self {
        Action::Done
    }

    /// [`Action::RequeueAfter`] with `delay`.
    ///
    /// ```
    /// # use informer_runtime::controller::{Action, ErrorKind, ReconcileError};
    /// use std::time::Duration;
    /// assert_eq!(Action::requeue_after(Duration::from_secs(5)), Action::RequeueAfter(Duration::from_secs(5)));
    /// ```
    pub fn requeue_after(delay: Duration) -> Self {
        Action::RequeueAfter(delay)
    }

    /// [`Action::RequeueAfter`] with `delay`, by kube-runtime's name and meaning
    /// (kube-runtime's `Action::requeue(d)`): the same as
    /// [`requeue_after`](Self::requeue_after). controller-runtime's `Result{Requeue: true}`
    /// is [`requeue_rate_limited`](Self::requeue_rate_limited).
    ///
    /// ```
    /// # use informer_runtime::controller::Action;
    /// use std::time::Duration;
    /// assert_eq!(Action::requeue(Duration::from_secs(300)), Action::requeue_after(Duration::from_secs(300)));
    /// ```
    pub fn requeue(delay: Duration) -> Self {
        Self::requeue_after(delay)
    }

    /// [`Action::Requeue`]: reconcile again after the key's rate-limited backoff, which is
    /// not forgotten (controller-runtime's `Result{Requeue: true}`). Not a polling
    /// schedule: for that, [`requeue_after`](Self::requeue_after).
    ///
    /// ```
    /// # use informer_runtime::controller::Action;
    /// assert_eq!(Action::requeue_rate_limited(), Action::Requeue);
    /// assert_eq!(Action::requeue_rate_limited().requeue_delay(), None, "the rate limiter picks the delay");
    /// ```
    pub fn requeue_rate_limited() -> Self {
        Action::Requeue
    }

    /// The requeue delay the action names, if any: `None` for [`Action::Done`], and for
    /// [`Action::Requeue`], whose delay the queue's rate limiter picks.
    ///
    /// ```
    /// # use informer_runtime::controller::{Action, ErrorKind, ReconcileError};
    /// assert_eq!(Action::Done.requeue_delay(), None);
    /// ```
    pub fn requeue_delay(&self) -> Option<Duration> {
        match self {
            Action::Done | Action::Requeue => None,
            Action::RequeueAfter(delay) => Some(*delay),
        }
    }
}

/// Whether a failed reconcile is retried.
///
/// ```
/// use informer_runtime::controller::{ErrorKind, ReconcileError};
/// assert_eq!(ReconcileError::terminal("bad spec").kind(), ErrorKind::Terminal);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Retried after the key's rate-limited backoff (client-go's `AddRateLimited`).
    Transient,
    /// Logged and counted, never retried: the key waits for its next change (say, an
    /// invalid spec that only a user can fix).
    Terminal,
}

/// The boxed error a [`ReconcileError`] carries.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// A failed reconcile: an error and whether it is retried ([`ErrorKind`]).
///
/// Any `std::error::Error + Send + Sync + 'static` converts into a **transient** error, so
/// `?` works on `kube::Error`, `serde_json::Error` and friends. Use
/// [`terminal`](Self::terminal) for errors that retrying cannot fix.
///
/// A write that fails with `409 Conflict` (someone wrote the object since the cache saw it)
/// is transient like any other error: the key is reconciled again after its backoff, from a
/// cache that by then holds the newer object. To retry one write on the spot instead,
/// re-reading the object each time, wrap it in
/// [`retry_on_conflict`](crate::retry::retry_on_conflict).
///
/// `ReconcileError` deliberately does not implement `std::error::Error` itself (as
/// `anyhow::Error` does not): that blanket conversion would otherwise conflict with the
/// standard `From<T> for T`. Reach the underlying error through
/// [`as_error`](Self::as_error) or [`into_error`](Self::into_error).
///
/// ```
/// use informer_runtime::controller::{ErrorKind, ReconcileError};
///
/// fn parse(s: &str) -> Result<u32, ReconcileError> {
///     Ok(s.parse::<u32>()?) // ParseIntError -> transient
/// }
/// let e = parse("x").unwrap_err();
/// assert_eq!(e.kind(), ErrorKind::Transient);
///
/// let e = ReconcileError::terminal(format!("replicas must be positive, got {}", -1));
/// assert!(e.is_terminal());
/// assert_eq!(e.to_string(), "replicas must be positive, got -1");
/// ```
pub struct ReconcileError {
    kind: ErrorKind,
    error: BoxError,
}

impl ReconcileError {
    /// A transient error: retried after the key's backoff. Accepts any error, a `String` or a
    /// `&str`.
    ///
    /// ```
    /// # use informer_runtime::controller::{Action, ErrorKind, ReconcileError};
    /// let e = ReconcileError::transient("the bucket is not ready yet");
    /// assert_eq!(e.kind(), ErrorKind::Transient);
    /// ```
    pub fn transient(error: impl Into<BoxError>) -> Self {
        Self {
            kind: ErrorKind::Transient,
            error: error.into(),
        }
    }

    /// A terminal error: logged and counted, not retried. Accepts any error, a `String` or a
    /// `&str`.
    ///
    /// ```
    /// # use informer_runtime::controller::{Action, ErrorKind, ReconcileError};
    /// let e = ReconcileError::terminal(std::io::Error::other("bad certificate"));
    /// assert!(e.is_terminal());
    /// ```
    pub fn terminal(error: impl Into<BoxError>) -> Self {
        Self {
            kind: ErrorKind::Terminal,
            error: error.into(),
        }
    }

    /// Whether the error is retried.
    ///
    /// ```
    /// # use informer_runtime::controller::{Action, ErrorKind, ReconcileError};
    /// assert_eq!(ReconcileError::from(std::fmt::Error).kind(), ErrorKind::Transient);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Whether the error is [terminal](ErrorKind::Terminal).
    ///
    /// ```
    /// # use informer_runtime::controller::{Action, ErrorKind, ReconcileError};
    /// assert!(!ReconcileError::transient("retry me").is_terminal());
    /// ```
    pub fn is_terminal(&self) -> bool {
        self.kind == ErrorKind::Terminal
    }

    /// What happens to the key when no error policy says otherwise
    /// ([`KeyReconciler::on_error`]): [`Action::Requeue`] (after the key's backoff) for a
    /// transient error, [`Action::Done`] (not retried) for a terminal one. An error policy
    /// that only records the failure returns this.
    ///
    /// ```
    /// # use informer_runtime::controller::{Action, ReconcileError};
    /// assert_eq!(ReconcileError::transient("later").default_action(), Action::Requeue);
    /// assert_eq!(ReconcileError::terminal("never").default_action(), Action::Done);
    /// ```
    pub fn default_action(&self) -> Action {
        match self.kind {
            ErrorKind::Transient => Action::Requeue,
            ErrorKind::Terminal => Action::Done,
        }
    }

    /// The underlying error.
    ///
    /// ```
    /// # use informer_runtime::controller::{Action, ErrorKind, ReconcileError};
    /// let e = ReconcileError::from(std::fmt::Error);
    /// assert!(e.as_error().downcast_ref::<std::fmt::Error>().is_some());
    /// ```
    pub fn as_error(&self) -> &(dyn StdError + Send + Sync + 'static) {
        &*self.error
    }

    /// The underlying error, by value.
    ///
    /// ```
    /// # use informer_runtime::controller::{Action, ErrorKind, ReconcileError};
    /// let boxed = ReconcileError::terminal("no").into_error();
    /// assert_eq!(boxed.to_string(), "no");
    /// ```
    pub fn into_error(self) -> BoxError {
        self.error
    }
}

impl<E: StdError + Send + Sync + 'static> From<E> for ReconcileError {
    fn from(error: E) -> Self {
        Self::transient(error)
    }
}

/// A `ReconcileError` where a boxed error is wanted (a children function's `Result`, say):
/// the error, with its kind kept for the library to read back (a terminal error stays
/// terminal). Its `Display` is the error's.
///
/// ```
/// # use informer_runtime::controller::{BoxError, ReconcileError};
/// let boxed: BoxError = ReconcileError::terminal("replicas must be positive").into();
/// assert_eq!(boxed.to_string(), "replicas must be positive");
/// ```
impl From<ReconcileError> for BoxError {
    fn from(error: ReconcileError) -> Self {
        Box::new(KindedError(error))
    }
}

/// A [`ReconcileError`] as a `std::error::Error` (see its `From` for [`BoxError`]).
#[derive(Debug)]
pub(crate) struct KindedError(ReconcileError);

impl KindedError {
    /// The kind of the error it carries.
    pub(crate) fn kind(&self) -> ErrorKind {
        self.0.kind()
    }
}

impl fmt::Display for KindedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl StdError for KindedError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(self.0.as_error())
    }
}

/// The error's own words, except that an API server's error (`kube::Error::Api`) is
/// in one line: `configmaps "a" not found (404 NotFound)`.
impl fmt::Display for ReconcileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.error.downcast_ref::<kube::Error>() {
            Some(err) => f.write_str(&brief(err)),
            None => fmt::Display::fmt(&self.error, f),
        }
    }
}

impl fmt::Debug for ReconcileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReconcileError")
            .field("kind", &self.kind)
            .field("error", &self.error)
            .finish()
    }
}

/// Why the runner itself failed a reconcile (these count as transient errors).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RunnerFailure {
    #[error("reconcile panicked: {0}")]
    Panicked(String),
    #[error("reconcile did not finish within {0:?}")]
    TimedOut(Duration),
}
