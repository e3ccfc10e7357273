//! The handler a controller registers on each informer: change → filters → keys → queue.

use std::sync::Arc;

use informer_core::queue::{PRIORITY_LOW, PRIORITY_NORMAL};
use informer_core::{Deleted, Handler, Notification, ObjectKey, Queue};
use kube::Resource;

use super::filter::{Filter, is_bulk, objects};
use super::owner::OwnerMatcher;

/// A user's mapping from a watched object to the keys of primary objects.
pub(crate) type MapperFn<K> = Arc<dyn Fn(&K) -> Vec<ObjectKey> + Send + Sync>;

/// How a changed object becomes keys.
pub(crate) enum Mapping<K> {
    /// The object's own key (the primary resource).
    Own,
    /// The key of its controlling owner of the controller's kind.
    Owner(OwnerMatcher),
    /// A user's function.
    Mapper(MapperFn<K>),
}

/// Puts the keys a change maps to on the queue: at low priority for the initial list and
/// resyncs, at normal priority for real changes.
pub(crate) struct EnqueueHandler<K> {
    queue: Arc<dyn Queue<ObjectKey>>,
    mapping: Mapping<K>,
    filters: Vec<Filter<K>>,
}

impl<K: Resource + 'static> EnqueueHandler<K> {
    pub(crate) fn new(
        queue: Arc<dyn Queue<ObjectKey>>,
        mapping: Mapping<K>,
        filters: Vec<Filter<K>>,
    ) -> Self {
        Self {
            queue,
            mapping,
            filters,
        }
    }

    /// The keys `notification` maps to, without duplicates, in a stable order.
    pub(crate) fn keys(&self, notification: &Notification<K>) -> Vec<ObjectKey> {
        let mut keys = Vec::new();
        if let (Mapping::Own, Notification::Delete(Deleted::FinalStateUnknown { key, .. })) =
            (&self.mapping, notification)
        {
            keys.push(key.clone());
            return keys;
        }
        let (first, second) = objects(notification);
        for obj in [first, second].into_iter().flatten() {
            match &self.mapping {
                Mapping::Own => keys.extend(ObjectKey::from_resource(&**obj).ok()),
                Mapping::Owner(matcher) => keys.extend(matcher.owner_key(obj.meta())),
                Mapping::Mapper(map) => keys.extend(map(obj)),
            }
        }
        if keys.len() > 1 {
            let mut seen = std::collections::HashSet::with_capacity(keys.len());
            keys.retain(|k| seen.insert(k.clone()));
        }
        keys
    }
}

impl<K: Resource + Send + Sync + 'static> EnqueueHandler<K> {
    fn handle(&self, notification: &Notification<K>) {
        if !self.filters.iter().all(|f| f.matches(notification)) {
            return;
        }
        let priority = if is_bulk(notification) {
            PRIORITY_LOW
        } else {
            PRIORITY_NORMAL
        };
        for key in self.keys(notification) {
            self.queue.add_with_priority(key, priority);
        }
    }
}

impl<K: Resource + Send + Sync + 'static> Handler<K> for EnqueueHandler<K> {
    fn on_add(&self, obj: &Arc<K>, is_initial_list: bool) {
        self.handle(&Notification::Add {
            object: obj.clone(),
            is_initial_list,
        })
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        self.handle(&Notification::Update {
            old: old.clone(),
            new: new.clone(),
        })
    }

    fn on_delete(&self, deleted: &Deleted<K>) {
        self.handle(&Notification::Delete(deleted.clone()))
    }

    fn notify(&self, notification: &Notification<K>) {
        self.handle(notification)
    }
}
