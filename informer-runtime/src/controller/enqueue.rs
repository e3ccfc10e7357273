//! The handler a controller registers on each informer: change → filters → keys → queue.

use std::sync::Arc;

use informer_core::queue::{PRIORITY_LOW, PRIORITY_NORMAL};
use informer_core::{Deleted, Handler, Notification, ObjectKey, Queue};
use kube::Resource;
use parking_lot::Mutex;

use super::consistency::{Gate, ResourceId};
use super::filter::Filter;
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

/// Keys collected before they are put on the queue even without a flush.
const ENQUEUE_BATCH: usize = 256;

/// Puts the keys a change maps to on the queue: at low priority for the initial list and
/// resyncs, at normal priority for real changes. Keys are collected during a run of
/// notifications and queued in order with one `add_batch_with_priority` per run of equal
/// priority when the informer flushes the handler (or every 256 keys), as
/// [`EnqueueKeys`](informer_core::EnqueueKeys) does.
pub(crate) struct EnqueueHandler<K> {
    queue: Arc<dyn Queue<ObjectKey>>,
    mapping: Mapping<K>,
    filters: Vec<Filter<K>>,
    pending: Mutex<Vec<(ObjectKey, i32)>>,
    /// Read-your-own-writes: the gate, and the resource of this handler's cache, to leave
    /// out the watch echoes of writes already reconciled.
    echoes: Option<(Arc<Gate>, ResourceId)>,
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
            pending: Mutex::new(Vec::new()),
            echoes: None,
        }
    }

    /// Leaves out the echoes of writes `gate` knows were reconciled already.
    pub(crate) fn with_gate(mut self, gate: Option<&Arc<Gate>>) -> Self
    where
        K: Resource<DynamicType: Default>,
    {
        self.echoes = gate.map(|gate| (gate.clone(), ResourceId::of::<K>()));
        self
    }

    /// The keys `notification` maps to, without duplicates, in a stable order.
    pub(crate) fn keys(&self, notification: &Notification<K>) -> Vec<ObjectKey> {
        let (first, second) = notification.objects();
        let mut keys: Vec<ObjectKey> = match &self.mapping {
            // An object's own key: an update's old and new state have the same one.
            Mapping::Own => return notification.key().into_iter().collect(),
            Mapping::Owner(matcher) => [first, second]
                .into_iter()
                .flatten()
                .filter_map(|obj| matcher.owner_key(obj.meta()))
                .collect(),
            Mapping::Mapper(map) => [first, second]
                .into_iter()
                .flatten()
                .flat_map(|obj| map(obj))
                .collect(),
        };
        if keys.len() > 1 {
            let mut seen = std::collections::HashSet::with_capacity(keys.len());
            keys.retain(|k| seen.insert(k.clone()));
        }
        keys
    }
}

impl<K: Resource + Send + Sync + 'static> EnqueueHandler<K> {
    fn handle(&self, notification: &Notification<K>) {
        if !self.filters.is_empty() {
            let resync = notification.is_resync();
            if !self.filters.iter().all(|f| f.admits(notification, resync)) {
                return;
            }
        }
        let priority = if notification.is_bulk() {
            PRIORITY_LOW
        } else {
            PRIORITY_NORMAL
        };
        let mut keys = self.keys(notification);
        if let Some((gate, resource)) = &self.echoes
            && gate.expects_echoes()
        {
            take_echo(
                gate,
                resource,
                notification,
                &mut keys,
                &*self.queue,
                priority,
            );
        }
        if keys.is_empty() {
            return;
        }
        let mut pending = self.pending.lock();
        pending.extend(keys.into_iter().map(|key| (key, priority)));
        if pending.len() >= ENQUEUE_BATCH {
            let keys = std::mem::replace(&mut *pending, Vec::with_capacity(ENQUEUE_BATCH));
            drop(pending);
            self.enqueue(keys);
        }
    }

    /// Queues `keys` in order, one batch per run of equal priority.
    fn enqueue(&self, keys: Vec<(ObjectKey, i32)>) {
        let mut keys = keys.into_iter().peekable();
        while let Some((key, priority)) = keys.next() {
            let mut run = vec![key];
            while let Some((key, _)) = keys.next_if(|(_, p)| *p == priority) {
                run.push(key);
            }
            self.queue.add_batch_with_priority(run, priority);
        }
    }
}

/// Takes out of `keys` the key whose reconcile made the write `notification` echoes, and
/// queues it unless it was reconciled since (see [`Gate::take_echo`]).
#[cold]
fn take_echo<K: Resource>(
    gate: &Gate,
    resource: &ResourceId,
    notification: &Notification<K>,
    keys: &mut Vec<ObjectKey>,
    queue: &dyn Queue<ObjectKey>,
    priority: i32,
) {
    let object = match notification {
        Notification::Add { object, .. } | Notification::Update { new: object, .. } => object,
        Notification::Delete(Deleted::Object(object)) => object,
        Notification::Delete(Deleted::FinalStateUnknown { .. }) => return,
    };
    let meta = object.meta();
    let (Some(name), Some(rv)) = (meta.name.as_deref(), meta.resource_version.as_deref()) else {
        return;
    };
    gate.take_echo(
        resource,
        &ObjectKey::new(meta.namespace.as_deref(), name),
        rv,
        keys,
        queue,
        priority,
    );
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

    fn flush(&self) {
        let keys = {
            let mut pending = self.pending.lock();
            if pending.is_empty() {
                return;
            }
            let capacity = pending.len();
            std::mem::replace(&mut *pending, Vec::with_capacity(capacity))
        };
        self.enqueue(keys);
    }
}
