//! [`Handler`]: what an informer calls when its cache changes.

use std::marker::PhantomData;
use std::sync::Arc;

use kube_core::Resource;
use parking_lot::Mutex;

use crate::key::ObjectKey;
use crate::queue::Queue;

/// How an object left the cache.
///
/// Go controllers must remember to type-switch on `DeletedFinalStateUnknown` in every delete
/// handler, and forgetting it is a classic bug. Here the two cases are an enum, so a handler
/// cannot forget the second one.
#[derive(Debug)]
pub enum Deleted<K> {
    /// A delete that was observed: the object as it was when deleted.
    Object(Arc<K>),
    /// The object vanished while the watch was down (found missing by a relist): the final
    /// state is unknown. `last_known` is the last state the cache held, as Go's
    /// `DeletedFinalStateUnknown.Obj`: a shared informer's handlers always get `Some` for an
    /// object they were told of (the cache fills it in when a FIFO did not); `None` only for
    /// a key the cache never held, which a FIFO of your own may report.
    FinalStateUnknown {
        /// The key of the vanished object.
        key: ObjectKey,
        /// The last state seen before it vanished.
        last_known: Option<Arc<K>>,
    },
}

impl<K> Deleted<K> {
    /// The last known state of the object, if any.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::{Deleted, ObjectKey};
    ///
    /// let gone: Deleted<u32> = Deleted::FinalStateUnknown { key: ObjectKey::cluster("a"), last_known: None };
    /// assert!(gone.object().is_none());
    /// assert_eq!(Deleted::Object(Arc::new(7u32)).object().map(|o| **o), Some(7));
    /// ```
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            Deleted::Object(obj) => Some(obj),
            Deleted::FinalStateUnknown { last_known, .. } => last_known.as_ref(),
        }
    }

    /// Whether this delete was observed (as opposed to inferred by a relist).
    pub fn is_observed(&self) -> bool {
        matches!(self, Deleted::Object(_))
    }

    /// The key of the deleted object: `key_of` of an observed delete's object, and the key
    /// a delete whose final state is unknown carries (`key_of` is not called then, whether
    /// or not a last state is known). `None` when `key_of` gives none.
    ///
    /// Use it where keys come from a custom key function; [`key`](Self::key) uses the
    /// `namespace/name` key.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::{Deleted, ObjectKey};
    ///
    /// let seen = Deleted::Object(Arc::new("web".to_string()));
    /// assert_eq!(seen.key_with(|name| Some(ObjectKey::cluster(name))), Some(ObjectKey::cluster("web")));
    /// let gone: Deleted<String> = Deleted::FinalStateUnknown { key: ObjectKey::cluster("old"), last_known: None };
    /// assert_eq!(gone.key_with(|_| None), Some(ObjectKey::cluster("old")));
    /// ```
    pub fn key_with(&self, key_of: impl FnOnce(&K) -> Option<ObjectKey>) -> Option<ObjectKey> {
        match self {
            Deleted::Object(object) => key_of(object),
            Deleted::FinalStateUnknown { key, .. } => Some(key.clone()),
        }
    }
}

impl<K: Resource> Deleted<K> {
    /// The `namespace/name` key of the deleted object, as [`key_with`](Self::key_with) says:
    /// client-go's `DeletionHandlingMetaNamespaceKeyFunc` (and, as an [`ObjectKey`],
    /// `DeletionHandlingObjectToName`). An observed delete of an object without a name
    /// gives `None` (Go returns an error).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::{Deleted, ObjectKey};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let mut pod = Pod::default();
    /// pod.metadata.namespace = Some("default".into());
    /// pod.metadata.name = Some("web-0".into());
    /// assert_eq!(Deleted::Object(Arc::new(pod)).key(), Some(ObjectKey::new(Some("default"), "web-0")));
    /// let gone: Deleted<Pod> = Deleted::FinalStateUnknown {
    ///     key: ObjectKey::new(Some("default"), "web-1"),
    ///     last_known: None,
    /// };
    /// assert_eq!(gone.key(), Some(ObjectKey::new(Some("default"), "web-1")));
    /// ```
    pub fn key(&self) -> Option<ObjectKey> {
        self.key_with(|object| ObjectKey::from_resource(object).ok())
    }
}

impl<K> Clone for Deleted<K> {
    fn clone(&self) -> Self {
        match self {
            Deleted::Object(obj) => Deleted::Object(obj.clone()),
            Deleted::FinalStateUnknown { key, last_known } => Deleted::FinalStateUnknown {
                key: key.clone(),
                last_known: last_known.clone(),
            },
        }
    }
}

/// One change of the cache, as delivered to a [`Handler`].
#[derive(Debug)]
pub enum Notification<K> {
    /// An object entered the cache.
    Add {
        /// The object.
        object: Arc<K>,
        /// True for objects of the initial list (or of the cache replayed to a handler added
        /// after start); false for objects created later.
        is_initial_list: bool,
    },
    /// An object changed, or was resynced ([`is_resync`](Self::is_resync)): on a periodic
    /// resync `old` and `new` are the same object.
    Update {
        /// The state before the change.
        old: Arc<K>,
        /// The state after the change.
        new: Arc<K>,
    },
    /// An object left the cache.
    Delete(Deleted<K>),
}

impl<K> Notification<K> {
    /// The kind of change, for logs and metrics: `"add"`, `"update"` or `"delete"`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::{Deleted, Notification};
    ///
    /// let gone = Notification::Delete(Deleted::Object(Arc::new(1u8)));
    /// assert_eq!(gone.kind(), "delete");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            Notification::Add { .. } => "add",
            Notification::Update { .. } => "update",
            Notification::Delete(_) => "delete",
        }
    }

    /// The objects the change concerns, the current state first: the added object; for an
    /// update the new state and, when it is another object, the old one (what an object
    /// maps to may differ between the two); for a delete the last known state, if any.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::Notification;
    ///
    /// let (old, new) = (Arc::new(1u8), Arc::new(2u8));
    /// let update = Notification::Update { old: old.clone(), new: new.clone() };
    /// assert_eq!(update.objects(), (Some(&new), Some(&old)));
    /// let resync = Notification::Update { old: new.clone(), new: new.clone() };
    /// assert_eq!(resync.objects(), (Some(&new), None));
    /// ```
    pub fn objects(&self) -> (Option<&Arc<K>>, Option<&Arc<K>>) {
        match self {
            Notification::Add { object, .. } => (Some(object), None),
            Notification::Update { old, new } if Arc::ptr_eq(old, new) => (Some(new), None),
            Notification::Update { old, new } => (Some(new), Some(old)),
            Notification::Delete(deleted) => (deleted.object(), None),
        }
    }

    /// The key of the changed object: `key_of` of the added object, of an update's new
    /// state or of the deleted object, and for a delete whose final state is unknown the
    /// key it carries (whether or not a last state is known). `None` when `key_of` gives
    /// none.
    ///
    /// Use it where keys come from a custom key function (a store's
    /// [`key_of`](crate::Store::key_of)); [`key`](Self::key) uses the `namespace/name` key.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::{Deleted, Notification, ObjectKey};
    ///
    /// let add = Notification::Add { object: Arc::new("web".to_string()), is_initial_list: false };
    /// assert_eq!(add.key_with(|name| Some(ObjectKey::cluster(name))), Some(ObjectKey::cluster("web")));
    /// let gone: Notification<String> = Notification::Delete(Deleted::FinalStateUnknown {
    ///     key: ObjectKey::cluster("old"),
    ///     last_known: None,
    /// });
    /// assert_eq!(gone.key_with(|_| None), Some(ObjectKey::cluster("old")));
    /// ```
    pub fn key_with(&self, key_of: impl FnOnce(&K) -> Option<ObjectKey>) -> Option<ObjectKey> {
        match self {
            Notification::Add { object, .. } => key_of(object),
            Notification::Update { new, .. } => key_of(new),
            Notification::Delete(deleted) => deleted.key_with(key_of),
        }
    }
}

impl<K: Resource> Notification<K> {
    /// The `namespace/name` key ([`ObjectKey::from_resource`]) of the changed object, as
    /// [`key_with`](Self::key_with) says; `None` for an object without a name.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::{Notification, ObjectKey};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let mut pod = Pod::default();
    /// pod.metadata.namespace = Some("default".into());
    /// pod.metadata.name = Some("web-0".into());
    /// let add = Notification::Add { object: Arc::new(pod), is_initial_list: false };
    /// assert_eq!(add.key(), Some(ObjectKey::new(Some("default"), "web-0")));
    /// ```
    pub fn key(&self) -> Option<ObjectKey> {
        self.key_with(|object| ObjectKey::from_resource(object).ok())
    }

    /// Whether this is a resync: an `Update` whose old and new objects have the same
    /// `metadata.resourceVersion`, which is what client-go's `sharedIndexInformer` calls a
    /// sync (`isSync` in its `OnUpdate`: such updates go only to the handlers whose resync
    /// is due) and what controller-runtime's `ResourceVersionChangedPredicate` drops.
    ///
    /// The rules, one by one:
    /// - an update of the very same object (`old` and `new` the same `Arc`, as a periodic
    ///   resync delivers the cached object) is a resync;
    /// - an update whose objects carry equal resource versions (an object a relist found
    ///   unchanged) is a resync;
    /// - a missing resource version counts as the empty one, as in Go (where
    ///   `GetResourceVersion()` of an unset version is `""`): two objects without one, or
    ///   one without and one with `""`, have the same version, so the update is a resync;
    /// - an update whose versions differ is a real change;
    /// - adds and deletes are never resyncs.
    ///
    /// The API server stamps every object with a version, so only sources that do not
    /// (hand-written test sources) meet the third rule.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::Notification;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let mut old = Pod::default();
    /// old.metadata.resource_version = Some("7".into());
    /// let mut new = old.clone();
    /// let relisted = Notification::Update { old: Arc::new(old.clone()), new: Arc::new(new.clone()) };
    /// assert!(relisted.is_resync());
    /// new.metadata.resource_version = Some("8".into());
    /// let changed = Notification::Update { old: Arc::new(old), new: Arc::new(new) };
    /// assert!(!changed.is_resync());
    /// ```
    pub fn is_resync(&self) -> bool {
        match self {
            Notification::Update { old, new } => {
                Arc::ptr_eq(old, new) || resource_version(&**old) == resource_version(&**new)
            }
            Notification::Add { .. } | Notification::Delete(_) => false,
        }
    }

    /// Whether this is bulk, probably no-op work: an add of the initial list (or of the
    /// cache replayed to a handler added late), or a [resync](Self::is_resync). Controllers
    /// queue the keys of such changes behind those of real changes.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::Notification;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let pod = Arc::new(Pod::default());
    /// assert!(Notification::Add { object: pod.clone(), is_initial_list: true }.is_bulk());
    /// assert!(!Notification::Add { object: pod, is_initial_list: false }.is_bulk());
    /// ```
    pub fn is_bulk(&self) -> bool {
        match self {
            Notification::Add {
                is_initial_list, ..
            } => *is_initial_list,
            Notification::Update { .. } => self.is_resync(),
            Notification::Delete(_) => false,
        }
    }
}

/// An object's `metadata.resourceVersion`, missing read as empty (as Go reads it).
fn resource_version<K: Resource>(object: &K) -> &str {
    object.meta().resource_version.as_deref().unwrap_or("")
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Notification::Add {
                object,
                is_initial_list,
            } => Notification::Add {
                object: object.clone(),
                is_initial_list: *is_initial_list,
            },
            Notification::Update { old, new } => Notification::Update {
                old: old.clone(),
                new: new.clone(),
            },
            Notification::Delete(d) => Notification::Delete(d.clone()),
        }
    }
}

/// Receives the changes of an informer's cache.
///
/// Handlers run on the informer's notification task for that handler: each handler gets its
/// own buffer and task, so a slow handler holds up neither the cache nor other handlers. A
/// handler should be quick (typically: compute a key and put it on a workqueue).
///
/// Any `Fn(&Notification<K>)` closure is a handler; [`HandlerFns`] builds one from up to three
/// closures, as client-go's `ResourceEventHandlerFuncs`.
///
/// ```
/// use informer_core::{Handler, Notification};
///
/// let handler = |n: &Notification<String>| {
///     if let Notification::Add { object, .. } = n {
///         println!("added {object}");
///     }
/// };
/// fn takes_handler(_: impl Handler<String>) {}
/// takes_handler(handler);
/// ```
pub trait Handler<K>: Send + Sync {
    /// An object entered the cache.
    fn on_add(&self, obj: &Arc<K>, is_initial_list: bool);
    /// An object changed (or was resynced: then `old` and `new` are the same).
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>);
    /// An object left the cache.
    fn on_delete(&self, deleted: &Deleted<K>);

    /// Dispatches a [`Notification`] to the matching method.
    fn notify(&self, notification: &Notification<K>) {
        match notification {
            Notification::Add {
                object,
                is_initial_list,
            } => self.on_add(object, *is_initial_list),
            Notification::Update { old, new } => self.on_update(old, new),
            Notification::Delete(deleted) => self.on_delete(deleted),
        }
    }

    /// Called after a run of notifications (everything buffered for this handler, or at
    /// most a few hundred of them), before the handler waits for more. A handler that defers
    /// work while notifications keep coming finishes it here: [`EnqueueKeys`] collects keys
    /// and puts them on its queue with one [`Queue::add_batch`], so
    /// the queue's lock is taken once per run instead of once per change. The default does
    /// nothing.
    ///
    /// Informers call it on the handler's task, after the last notification of the run, and
    /// also after a notification that panicked; it is never called concurrently with
    /// [`notify`](Handler::notify).
    fn flush(&self) {}
}

impl<K, F> Handler<K> for F
where
    F: Fn(&Notification<K>) + Send + Sync,
{
    fn on_add(&self, obj: &Arc<K>, is_initial_list: bool) {
        self(&Notification::Add {
            object: obj.clone(),
            is_initial_list,
        })
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        self(&Notification::Update {
            old: old.clone(),
            new: new.clone(),
        })
    }
    fn on_delete(&self, deleted: &Deleted<K>) {
        self(&Notification::Delete(deleted.clone()))
    }
    fn notify(&self, notification: &Notification<K>) {
        self(notification)
    }
}

impl<K, H: Handler<K> + ?Sized> Handler<K> for Arc<H> {
    fn on_add(&self, obj: &Arc<K>, is_initial_list: bool) {
        (**self).on_add(obj, is_initial_list)
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        (**self).on_update(old, new)
    }
    fn on_delete(&self, deleted: &Deleted<K>) {
        (**self).on_delete(deleted)
    }
    fn notify(&self, notification: &Notification<K>) {
        (**self).notify(notification)
    }
    fn flush(&self) {
        (**self).flush()
    }
}

type AddFn<K> = Box<dyn Fn(&Arc<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Arc<K>, &Arc<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&Deleted<K>) + Send + Sync>;

/// A handler made of optional closures, one per kind of change; missing ones ignore the change.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use informer_core::{Handler, HandlerFns};
///
/// let adds = Arc::new(AtomicUsize::new(0));
/// let counter = adds.clone();
/// let handler = HandlerFns::<String>::new()
///     .on_add(move |_obj, _initial| { counter.fetch_add(1, Ordering::Relaxed); });
/// Handler::on_add(&handler, &Arc::new("a".to_string()), true);
/// assert_eq!(adds.load(Ordering::Relaxed), 1);
/// ```
pub struct HandlerFns<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> Default for HandlerFns<K> {
    fn default() -> Self {
        Self {
            add: None,
            update: None,
            delete: None,
        }
    }
}

impl<K> HandlerFns<K> {
    /// A handler that ignores everything until closures are set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the closure called when an object enters the cache.
    pub fn on_add(mut self, f: impl Fn(&Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Sets the closure called when an object changes.
    pub fn on_update(mut self, f: impl Fn(&Arc<K>, &Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Sets the closure called when an object leaves the cache.
    pub fn on_delete(mut self, f: impl Fn(&Deleted<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K> Handler<K> for HandlerFns<K> {
    fn on_add(&self, obj: &Arc<K>, is_initial_list: bool) {
        if let Some(f) = &self.add {
            f(obj, is_initial_list)
        }
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new)
        }
    }
    fn on_delete(&self, deleted: &Deleted<K>) {
        if let Some(f) = &self.delete {
            f(deleted)
        }
    }
}

type FilterFn<K> = Box<dyn Fn(&K) -> bool + Send + Sync>;

/// A handler that passes on only the changes of objects a filter accepts, to another
/// handler: client-go's `FilteringResourceEventHandler`. An object that starts passing the
/// filter is added, one that stops passing it is deleted, for the inner handler.
///
/// The rules, one by one:
/// - an add is passed on if the filter accepts the object;
/// - an update whose old and new state the filter both accept is passed on as an update;
/// - an update whose new state it accepts, but not the old one, is an add of the new state
///   (`is_initial_list` false);
/// - an update whose old state it accepts, but not the new one, is a delete of the old
///   state, as [`Deleted::Object`] (the object still exists: it left the filter, not the
///   cache);
/// - an update it accepts neither state of is dropped;
/// - a delete is passed on if the filter accepts the deleted object, which for a delete
///   whose final state is unknown is its last known state (Go's filters unwrap the
///   tombstone the same way); such a delete with no last known state is passed on, since
///   nothing is left to judge and a spurious delete is safer than a missed one;
/// - [`flush`](Handler::flush) is passed on.
///
/// The filter runs on the informer's task for this handler, once per object state it
/// judges: keep it quick, and never change the objects (they are the cache's). It is not a
/// filter of the cache: the informer still caches every object (use selectors to keep
/// objects out).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use informer_core::{FilteringHandler, Handler, HandlerFns};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = seen.clone();
/// let inner = HandlerFns::<String>::new()
///     .on_add(move |obj, _| log.lock().unwrap().push(format!("add {obj}")));
/// let handler = FilteringHandler::new(|name: &String| name.starts_with("web"), inner);
/// handler.on_add(&Arc::new("web-0".to_string()), false);
/// handler.on_add(&Arc::new("db-0".to_string()), false); // filtered out
/// handler.on_update(&Arc::new("db-1".to_string()), &Arc::new("web-1".to_string())); // now passes: an add
/// assert_eq!(*seen.lock().unwrap(), ["add web-0", "add web-1"]);
/// ```
pub struct FilteringHandler<K, H> {
    filter: FilterFn<K>,
    handler: H,
}

impl<K, H> FilteringHandler<K, H> {
    /// Passes the changes of the objects `filter` accepts on to `handler`.
    pub fn new(filter: impl Fn(&K) -> bool + Send + Sync + 'static, handler: H) -> Self {
        Self {
            filter: Box::new(filter),
            handler,
        }
    }

    /// The handler changes are passed on to.
    pub fn inner(&self) -> &H {
        &self.handler
    }
}

impl<K, H: Handler<K>> Handler<K> for FilteringHandler<K, H> {
    fn on_add(&self, obj: &Arc<K>, is_initial_list: bool) {
        if (self.filter)(obj) {
            self.handler.on_add(obj, is_initial_list)
        }
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        match ((self.filter)(old), (self.filter)(new)) {
            (true, true) => self.handler.on_update(old, new),
            (false, true) => self.handler.on_add(new, false),
            (true, false) => self.handler.on_delete(&Deleted::Object(old.clone())),
            (false, false) => {}
        }
    }
    fn on_delete(&self, deleted: &Deleted<K>) {
        if deleted.object().is_none_or(|obj| (self.filter)(obj)) {
            self.handler.on_delete(deleted)
        }
    }
    fn flush(&self) {
        self.handler.flush()
    }
}

impl<K, H: std::fmt::Debug> std::fmt::Debug for FilteringHandler<K, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilteringHandler")
            .field("handler", &self.handler)
            .finish_non_exhaustive()
    }
}

/// Keys collected before [`EnqueueKeys`] puts them on its queue even without a flush.
const ENQUEUE_BATCH: usize = 256;

/// The usual handler of a controller: puts the key (`namespace/name`) of every object that
/// was added, changed or deleted on a queue, as client-go controllers do with
/// `queue.Add(key)` in each of their event handler functions. For a delete whose final
/// state is unknown, the key it carries.
///
/// Keys are collected while the informer hands the handler a run of notifications and put
/// on the queue with one [`Queue::add_batch`] when the run ends ([`Handler::flush`]) or
/// every 256 keys, so that the queue's lock is taken once per run, not once per change
/// (workers taking keys meanwhile contend far less). An informer flushes its handlers
/// itself; code that calls the methods directly calls [`flush`](Handler::flush) after.
///
/// An object without a name has no key: it is skipped with a warning (informers never
/// deliver one; their caches skip such objects).
///
/// ```
/// use std::sync::Arc;
/// use informer_core::{EnqueueKeys, Handler, ObjectKey, Queue, WorkQueue};
/// use k8s_openapi::api::core::v1::Pod;
///
/// let queue = Arc::new(WorkQueue::<ObjectKey>::new());
/// let handler = EnqueueKeys::<Pod>::new(queue.clone());
/// let mut pod = Pod::default();
/// pod.metadata.namespace = Some("default".into());
/// pod.metadata.name = Some("web-0".into());
/// let pod = Arc::new(pod);
/// handler.on_add(&pod, false);
/// handler.on_update(&pod, &pod);
/// assert_eq!(queue.len(), 0); // collected, not queued yet
/// handler.flush();
/// assert_eq!(queue.len(), 1); // deduplicated by the queue
/// ```
pub struct EnqueueKeys<K> {
    queue: Arc<dyn Queue<ObjectKey>>,
    pending: Mutex<Vec<ObjectKey>>,
    _objects: PhantomData<fn(&K)>,
}

impl<K> EnqueueKeys<K> {
    /// A handler putting keys on `queue`.
    pub fn new(queue: Arc<dyn Queue<ObjectKey>>) -> Self {
        Self {
            queue,
            pending: Mutex::new(Vec::new()),
            _objects: PhantomData,
        }
    }

    fn push(&self, key: ObjectKey) {
        let mut pending = self.pending.lock();
        pending.push(key);
        if pending.len() >= ENQUEUE_BATCH {
            let keys = std::mem::replace(&mut *pending, Vec::with_capacity(ENQUEUE_BATCH));
            drop(pending);
            self.queue.add_batch(keys);
        }
    }
}

impl<K: Resource> EnqueueKeys<K> {
    fn push_key_of(&self, obj: &K) {
        match ObjectKey::from_resource(obj) {
            Ok(key) => self.push(key),
            Err(e) => tracing::warn!(error = %e, "an object without a key was not queued"),
        }
    }
}

impl<K: Resource> Handler<K> for EnqueueKeys<K> {
    fn on_add(&self, obj: &Arc<K>, _is_initial_list: bool) {
        self.push_key_of(obj)
    }
    fn on_update(&self, _old: &Arc<K>, new: &Arc<K>) {
        self.push_key_of(new)
    }
    fn on_delete(&self, deleted: &Deleted<K>) {
        match deleted {
            Deleted::Object(obj) => self.push_key_of(obj),
            Deleted::FinalStateUnknown { key, .. } => self.push(key.clone()),
        }
    }
    fn flush(&self) {
        let keys = {
            let mut pending = self.pending.lock();
            if pending.is_empty() {
                return;
            }
            let capacity = pending.len();
            std::mem::replace(&mut *pending, Vec::with_capacity(capacity))
        };
        self.queue.add_batch(keys);
    }
}

impl<K> std::fmt::Debug for EnqueueKeys<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnqueueKeys")
            .field("pending", &self.pending.lock().len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
