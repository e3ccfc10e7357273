//! [`Handler`]: what an informer calls when its cache changes.

use std::sync::Arc;

use crate::key::ObjectKey;

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
    /// state is unknown. `last_known` is the last state the cache held, if it held one.
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
    /// An object changed. On a resync `old` and `new` are the same object.
    Update {
        /// The state before the change.
        old: Arc<K>,
        /// The state after the change.
        new: Arc<K>,
    },
    /// An object left the cache.
    Delete(Deleted<K>),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn handler_is_object_safe() {
        fn _obj_safe(_: Arc<dyn Handler<String>>) {}
        let h: Arc<dyn Handler<String>> = Arc::new(HandlerFns::<String>::new());
        _obj_safe(h);
    }

    #[test]
    fn closure_handler_receives_every_kind_of_notification() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let h = move |n: &Notification<String>| {
            s.lock().unwrap().push(match n {
                Notification::Add { .. } => "add",
                Notification::Update { .. } => "update",
                Notification::Delete(Deleted::Object(_)) => "delete",
                Notification::Delete(Deleted::FinalStateUnknown { .. }) => "unknown",
            })
        };
        let o = Arc::new("x".to_string());
        h.on_add(&o, false);
        h.on_update(&o, &o);
        h.on_delete(&Deleted::Object(o.clone()));
        h.on_delete(&Deleted::FinalStateUnknown {
            key: ObjectKey::cluster("x"),
            last_known: Some(o),
        });
        assert_eq!(
            *seen.lock().unwrap(),
            ["add", "update", "delete", "unknown"]
        );
    }

    #[test]
    fn final_state_unknown_exposes_last_known_object() {
        let d = Deleted::FinalStateUnknown {
            key: ObjectKey::cluster("x"),
            last_known: Some(Arc::new(1u8)),
        };
        assert!(!d.is_observed());
        assert_eq!(d.object().map(|o| **o), Some(1));
    }
}
