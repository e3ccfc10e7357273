//! [`Filter`]: which cache changes put a key on a controller's queue.

use std::fmt;
use std::sync::Arc;

use informer_core::Notification;
use kube::Resource;

type FilterFn<K> = Arc<dyn Fn(&Notification<K>) -> bool + Send + Sync>;

/// A resync passes a built-in filter.
fn pass<K>(_: &Notification<K>) -> bool {
    true
}

/// Decides whether a change of the cache enqueues keys (controller-runtime's predicates).
///
/// **A filter of enqueueing, not of the cache.** The informer still caches and reports every
/// object; a filter only decides whether *this controller* queues a key for a change. Listers
/// keep returning filtered-out objects, and other controllers sharing the informer are not
/// affected. (To keep objects out of the cache, use label or field selectors.)
///
/// The built-in filters look at updates only: adds and deletes always pass, so a controller
/// never misses an object's arrival or departure. That includes an object deleted and
/// created again under its name while the cache did not look (a watch that broke, a
/// restart): a relist reports it as one update whose old and new object have different
/// `uid`s, and the built-in filters pass it; a filter of your own ([`new`](Self::new))
/// should too. A resync passes them too: an update whose
/// old and new object are the same ([`Notification::is_resync`]: a periodic resync, or an
/// unchanged object after a relist) reaches only a handler that asked for resyncs (the
/// controller's [`resync`](crate::controller::ControllerBuilder::resync)) while its resync
/// is due, and it is there to reconcile objects that did not change. So `resync = "10m"`
/// beside `Filter::generation_changed()` reconciles every object every ten minutes and,
/// between resyncs, on spec changes only (java-operator-sdk's generation-aware processing
/// with a `maxReconciliationInterval`). A filter of your own ([`new`](Self::new)) is asked
/// about a resync as about any update: `is_resync()` tells them apart. [`and`](Self::and)
/// and [`or`](Self::or) combine the answers of both kinds.
///
/// Several filters given to one watch must all pass ([`and`](Self::and)); combine with
/// [`or`](Self::or) for alternatives.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::Notification;
/// use informer_runtime::controller::Filter;
/// use k8s_openapi::api::apps::v1::Deployment;
///
/// let spec_or_labels = Filter::<Deployment>::generation_changed().or(Filter::labels_changed());
/// let not_paused = Filter::new(|n: &Notification<Deployment>| match n {
///     Notification::Update { new, .. } => new.spec.as_ref().and_then(|s| s.paused) != Some(true),
///     _ => true,
/// });
/// let filter = spec_or_labels.and(not_paused);
///
/// let mut old = Deployment::default();
/// old.metadata.generation = Some(1);
/// let mut new = old.clone();
/// new.metadata.generation = Some(2);
/// assert!(filter.matches(&Notification::Update { old: Arc::new(old.clone()), new: Arc::new(new) }));
/// assert!(!filter.matches(&Notification::Update { old: Arc::new(old.clone()), new: Arc::new(old) }));
/// ```
pub struct Filter<K> {
    f: FilterFn<K>,
    /// The answer to a resync ([`Notification::is_resync`]).
    on_resync: FilterFn<K>,
    name: &'static str,
}

impl<K> Clone for Filter<K> {
    fn clone(&self) -> Self {
        Self {
            f: self.f.clone(),
            on_resync: self.on_resync.clone(),
            name: self.name,
        }
    }
}

impl<K> fmt::Debug for Filter<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Filter").field(&self.name).finish()
    }
}

impl<K: 'static> Filter<K> {
    /// A custom filter: `f` returns whether the change enqueues keys. It runs on the
    /// informer's notification task for this controller, so it must be quick.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use informer_core::Notification;
    /// # use informer_runtime::controller::Filter;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let add = Notification::Add { object: Arc::new(Pod::default()), is_initial_list: false };
    /// let only_adds = Filter::<Pod>::new(|n| matches!(n, Notification::Add { .. }));
    /// assert!(only_adds.matches(&add));
    /// ```
    pub fn new(f: impl Fn(&Notification<K>) -> bool + Send + Sync + 'static) -> Self {
        let f: FilterFn<K> = Arc::new(f);
        Self {
            on_resync: f.clone(),
            f,
            name: "custom",
        }
    }

    /// Passes when both pass.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use informer_core::Notification;
    /// # use informer_runtime::controller::Filter;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let add = Notification::Add { object: Arc::new(Pod::default()), is_initial_list: false };
    /// let never = Filter::<Pod>::new(|_| false);
    /// assert!(!Filter::labels_changed().and(never).matches(&add));
    /// ```
    pub fn and(self, other: Filter<K>) -> Self {
        let (a, b) = (self.f, other.f);
        let (ra, rb) = (self.on_resync, other.on_resync);
        Self {
            f: Arc::new(move |n| a(n) && b(n)),
            on_resync: Arc::new(move |n| ra(n) && rb(n)),
            name: "and",
        }
    }

    /// Passes when either passes.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use informer_core::Notification;
    /// # use informer_runtime::controller::Filter;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let add = Notification::Add { object: Arc::new(Pod::default()), is_initial_list: false };
    /// let never = Filter::<Pod>::new(|_| false);
    /// assert!(never.or(Filter::labels_changed()).matches(&add), "adds pass labels_changed");
    /// ```
    pub fn or(self, other: Filter<K>) -> Self {
        let (a, b) = (self.f, other.f);
        let (ra, rb) = (self.on_resync, other.on_resync);
        Self {
            f: Arc::new(move |n| a(n) || b(n)),
            on_resync: Arc::new(move |n| ra(n) || rb(n)),
            name: "or",
        }
    }

    /// Whether `notification` passes the filter as a change. A resync reaching a
    /// controller's handler is answered by the filter's answer to resyncs instead (the
    /// built-in filters let it pass; see [`Filter`]).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use informer_core::Notification;
    /// # use informer_runtime::controller::Filter;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let add = Notification::Add { object: Arc::new(Pod::default()), is_initial_list: false };
    /// assert!(Filter::<Pod>::generation_changed().matches(&add));
    /// ```
    pub fn matches(&self, notification: &Notification<K>) -> bool {
        (self.f)(notification)
    }

    /// Whether `notification` queues keys at a handler: [`matches`](Self::matches), or for
    /// a resync (`resync`: its [`is_resync`](Notification::is_resync), computed once for
    /// all of a handler's filters), the filter's answer to resyncs.
    pub(crate) fn admits(&self, notification: &Notification<K>, resync: bool) -> bool {
        if resync {
            (self.on_resync)(notification)
        } else {
            (self.f)(notification)
        }
    }

    /// A filter on updates only (adds and deletes pass): `changed(old, new)`.
    fn on_update(
        name: &'static str,
        changed: impl Fn(&K, &K) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self {
            f: Arc::new(move |n| match n {
                Notification::Update { old, new } => !Arc::ptr_eq(old, new) && changed(old, new),
                Notification::Add { .. } | Notification::Delete(_) => true,
            }),
            on_resync: Arc::new(pass),
            name,
        }
    }
}

impl<K: Resource + 'static> Filter<K> {
    /// [`on_update`](Filter::on_update), but an update that replaces the object (another
    /// `uid`: deleted and created again under its name, both between two views of the cache,
    /// as a relist sees them) always passes: it is an arrival, not a change.
    fn on_object_update(
        name: &'static str,
        changed: impl Fn(&K, &K) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self::on_update(name, move |old: &K, new: &K| {
            old.meta().uid != new.meta().uid || changed(old, new)
        })
    }

    /// Updates pass only when `metadata.generation` changed, which the API server bumps on
    /// changes of the spec (not of the status or metadata). Kinds without a generation (say,
    /// ConfigMaps: always `None`) never pass on update. A deletion is not missed: the API
    /// server also bumps the generation when it sets `deletionTimestamp` on an object that
    /// finalizers hold (so a finalizer's cleanup runs), and the final delete always passes.
    /// A change of the finalizers alone does not pass.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::Notification;
    /// use informer_runtime::controller::Filter;
    /// use k8s_openapi::api::apps::v1::Deployment;
    ///
    /// let mut d = Deployment::default();
    /// d.metadata.generation = Some(3);
    /// let status_only = Notification::Update { old: Arc::new(d.clone()), new: Arc::new(d) };
    /// assert!(!Filter::generation_changed().matches(&status_only));
    /// ```
    pub fn generation_changed() -> Self {
        Self::on_object_update("generation_changed", |old: &K, new: &K| {
            old.meta().generation != new.meta().generation
        })
    }

    /// Updates pass only when the labels changed (a missing map equals an empty one).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::Notification;
    /// use informer_runtime::controller::Filter;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let old = Pod::default();
    /// let mut new = old.clone();
    /// new.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    /// let change = Notification::Update { old: Arc::new(old), new: Arc::new(new) };
    /// assert!(Filter::labels_changed().matches(&change));
    /// ```
    pub fn labels_changed() -> Self {
        Self::on_object_update("labels_changed", |old: &K, new: &K| {
            !same_map(old.meta().labels.as_ref(), new.meta().labels.as_ref())
        })
    }

    /// Updates pass only when the annotations changed (a missing map equals an empty one).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::Notification;
    /// use informer_runtime::controller::Filter;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let old = Pod::default();
    /// let unchanged = Notification::Update { old: Arc::new(old.clone()), new: Arc::new(old) };
    /// assert!(!Filter::annotations_changed().matches(&unchanged));
    /// ```
    pub fn annotations_changed() -> Self {
        Self::on_object_update("annotations_changed", |old: &K, new: &K| {
            !same_map(
                old.meta().annotations.as_ref(),
                new.meta().annotations.as_ref(),
            )
        })
    }

    /// Updates pass only when `metadata.resourceVersion` changed: drops resyncs and
    /// unchanged objects of a relist, keeps every real change (controller-runtime's
    /// `ResourceVersionChangedPredicate`; the rules are those of
    /// [`Notification::is_resync`], a missing version counting as the empty one).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::Notification;
    /// use informer_runtime::controller::Filter;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let pod = Arc::new(Pod::default());
    /// let resync = Notification::Update { old: pod.clone(), new: pod };
    /// assert!(!Filter::resource_version_changed().matches(&resync));
    /// ```
    pub fn resource_version_changed() -> Self {
        Self {
            f: Arc::new(|n| !n.is_resync()),
            on_resync: Arc::new(pass),
            name: "resource_version_changed",
        }
    }
}

fn same_map(
    a: Option<&std::collections::BTreeMap<String, String>>,
    b: Option<&std::collections::BTreeMap<String, String>>,
) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        (Some(m), None) | (None, Some(m)) => m.is_empty(),
        (None, None) => true,
    }
}
