//! The informer loop's step: apply popped [`Delta`]s to the cache and derive notifications.
//!
//! This is client-go's `processDeltas` (and, for [`Delta::ReplacedAll`], the atomic replace
//! of its `RealFIFO`): the cache is changed first, then the matching [`Notification`] is
//! produced from what the store reports it replaced, so old and new always come from the
//! same locked step.

use std::sync::Arc;

use kube_core::Resource;

use crate::error::StoreError;
use crate::fifo::Delta;
use crate::handler::{Deleted, Notification};
use crate::key::ObjectKey;
use crate::store::{Store, StoreOp};

/// Applies `deltas` to `store` in order and passes each resulting notification to `notify`.
///
/// - `Added`, `Updated`, `Replaced`, `Sync`: the object is stored; an `Update { old, new }`
///   is produced if the key was cached (for `Sync`, `old` is the cached object), an
///   `Add` otherwise, with `is_initial_list` as given.
/// - `Deleted`: the key is removed; a `Delete` is produced even if the key was not cached
///   (as client-go does), carrying the cached object as last known state of a
///   `FinalStateUnknown` that had none.
/// - `ReplacedAll`: the store is replaced in one step; deletes (as `FinalStateUnknown` with
///   the last cached state) come first, then updates, then adds.
/// - `ListPart`: each object is stored, as `Added`.
/// - `ListEnd`: every cached key the list does not hold is removed (a `Delete` of a
///   `FinalStateUnknown` with the last cached state), then the list's resource version is
///   recorded.
/// - `Bookmark`: the store's resource version is recorded.
///
/// # Errors
/// A delta whose object has no key is skipped and its error returned after the remaining
/// deltas have been applied, so one malformed object loses nothing else.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::{Delta, Notification, Store, ThreadSafeStore};
/// use informer_core::apply::apply_deltas;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let store = ThreadSafeStore::<ConfigMap>::new();
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("settings".into());
/// let mut seen = Vec::new();
/// apply_deltas(&store, vec![Delta::Added(Arc::new(cm.clone())), Delta::Updated(Arc::new(cm))], false, &mut |n| {
///     seen.push(matches!(n, Notification::Add { .. }));
/// })
/// .unwrap();
/// assert_eq!(seen, [true, false]);
/// assert_eq!(store.len(), 1);
/// ```
pub fn apply_deltas<K>(
    store: &dyn Store<K>,
    deltas: Vec<Delta<K>>,
    is_initial_list: bool,
    notify: &mut dyn FnMut(Notification<K>),
) -> Result<(), StoreError> {
    apply_all(
        store,
        deltas.into_iter().map(|delta| (delta, None)),
        is_initial_list,
        notify,
    )
}

/// As [`apply_deltas`], given the key of each delta's object where the caller knows it
/// (`keys[i]` for `deltas[i]`, as a FIFO's [`pop_keyed`](crate::fifo::Fifo::pop_keyed) gives
/// them), so that the store need not compute keys again.
///
/// The keys must have been computed by [`resource_key`](crate::resource_key); they are used
/// only if [`store.keys_by_resource_key()`](Store::keys_by_resource_key), and ignored
/// otherwise (as are missing ones). Everything else is as [`apply_deltas`].
///
/// # Errors
/// As [`apply_deltas`].
///
/// # Panics
/// If `keys` is not as long as `deltas`.
pub fn apply_keyed_deltas<K>(
    store: &dyn Store<K>,
    deltas: Vec<Delta<K>>,
    keys: Vec<Option<ObjectKey>>,
    is_initial_list: bool,
    notify: &mut dyn FnMut(Notification<K>),
) -> Result<(), StoreError> {
    assert_eq!(deltas.len(), keys.len(), "one key (or None) per delta");
    if !store.keys_by_resource_key() {
        return apply_deltas(store, deltas, is_initial_list, notify);
    }
    apply_all(store, deltas.into_iter().zip(keys), is_initial_list, notify)
}

/// As [`apply_keyed_deltas`], for deltas in the order the server sent them (a
/// [`RealFifo`](crate::RealFifo)'s batches), and then the store's resource version advances to
/// that of the last object, delete, bookmark or list of the batch (client-go's
/// `LastStoreSyncResourceVersion`): once a reader sees the store at version `v`, every change
/// up to `v` is in it. Resyncs (`Sync`, which re-deliver cached objects) and relist tombstones
/// (`FinalStateUnknown`) carry old versions and do not move it. Returns the version set, if
/// the batch had one.
///
/// Only for ordered batches: a [`DeltaFifo`](crate::DeltaFifo) groups events by key, so the
/// last version of one of its batches may be newer than events of other keys still queued.
///
/// # Errors
/// As [`apply_deltas`]; the resource version advances all the same.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::{Delta, Store, ThreadSafeStore};
/// use informer_core::apply::apply_ordered_deltas;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let store = ThreadSafeStore::<ConfigMap>::new();
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("settings".into());
/// cm.metadata.resource_version = Some("41".into());
/// let batch = vec![Delta::Added(Arc::new(cm)), Delta::Bookmark { resource_version: "42".into() }];
/// let set = apply_ordered_deltas(&store, batch, vec![None, None], false, &mut |_| {}).unwrap();
/// assert_eq!(set.as_deref(), Some("42"));
/// assert_eq!(store.resource_version().as_deref(), Some("42"));
/// ```
pub fn apply_ordered_deltas<K: Resource>(
    store: &dyn Store<K>,
    deltas: Vec<Delta<K>>,
    keys: Vec<Option<ObjectKey>>,
    is_initial_list: bool,
    notify: &mut dyn FnMut(Notification<K>),
) -> Result<Option<String>, StoreError> {
    let last = deltas.iter().rev().find_map(delta_resource_version);
    let last = last.map(str::to_owned);
    let applied = apply_keyed_deltas(store, deltas, keys, is_initial_list, notify);
    if let Some(rv) = &last {
        store.set_resource_version(rv);
    }
    applied.map(|()| last)
}

/// The resource version a delta brings the store to, for [`apply_ordered_deltas`]: `None` for
/// deltas that carry an old version (resyncs, relist tombstones) or none.
fn delta_resource_version<K: Resource>(delta: &Delta<K>) -> Option<&str> {
    let rv = match delta {
        Delta::Added(obj) | Delta::Updated(obj) | Delta::Deleted(Deleted::Object(obj)) => {
            obj.meta().resource_version.as_deref()
        }
        Delta::ReplacedAll {
            resource_version, ..
        }
        | Delta::ListEnd {
            resource_version, ..
        }
        | Delta::Bookmark { resource_version } => Some(resource_version.as_str()),
        // A part of a list is not the list: the store reaches its version at its end.
        Delta::Sync(_)
        | Delta::Replaced(_)
        | Delta::ListPart(_)
        | Delta::Deleted(Deleted::FinalStateUnknown { .. }) => None,
    };
    rv.filter(|rv| !rv.is_empty())
}

/// Applies every delta (with its key, if known); a delta that cannot be cached is logged
/// and skipped, and the first such error returned once all were applied. For a store that
/// [prefers batches](Store::prefers_batches), each run of writes and deletes of objects
/// with a key is one [`Store::apply`].
fn apply_all<K>(
    store: &dyn Store<K>,
    deltas: impl Iterator<Item = (Delta<K>, Option<ObjectKey>)>,
    is_initial_list: bool,
    notify: &mut dyn FnMut(Notification<K>),
) -> Result<(), StoreError> {
    let mut first_error = None;
    let mut record = |result: Result<(), StoreError>| {
        if let Err(e) = result {
            tracing::warn!(error = %e, "skipped a change that cannot be cached");
            first_error.get_or_insert(e);
        }
    };
    if !store.prefers_batches() {
        for (delta, key) in deltas {
            record(apply_one(store, delta, key, is_initial_list, notify));
        }
        return first_error.map_or(Ok(()), Err);
    }
    let mut run = Vec::new();
    for (delta, key) in deltas {
        match Write::of(store, delta, key) {
            Ok(write) => run.push(write),
            // The run ends at a delta that cannot join it, applied alone after it.
            Err(alone) => {
                let refused = apply_run(store, std::mem::take(&mut run), is_initial_list, notify);
                for (delta, key) in refused.into_iter().flatten().chain([alone]) {
                    record(apply_one(store, delta, key, is_initial_list, notify));
                }
            }
        }
    }
    for (delta, key) in apply_run(store, run, is_initial_list, notify)
        .into_iter()
        .flatten()
    {
        record(apply_one(store, delta, key, is_initial_list, notify));
    }
    first_error.map_or(Ok(()), Err)
}

/// A delta that [`apply_run`] can batch: the write or delete of an object whose key is
/// known.
enum Write<K> {
    Upsert(Arc<K>),
    Delete(ObjectKey, Deleted<K>),
}

impl<K> Write<K> {
    /// The delta as a batchable write, or back as it was (lists, bookmarks, an object
    /// without a key: [`apply_one`] reports it).
    #[allow(clippy::type_complexity, reason = "the delta and its key, given back")]
    fn of(
        store: &dyn Store<K>,
        delta: Delta<K>,
        known_key: Option<ObjectKey>,
    ) -> Result<Self, (Delta<K>, Option<ObjectKey>)> {
        match delta {
            Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj)
                if store.key_of(&obj).is_ok() =>
            {
                Ok(Self::Upsert(obj))
            }
            Delta::Deleted(deleted) => {
                // The key `apply_one` would delete.
                let key = match &deleted {
                    Deleted::FinalStateUnknown { key, .. } => Some(key.clone()),
                    Deleted::Object(obj) => known_key.clone().or_else(|| store.key_of(obj).ok()),
                };
                match key {
                    Some(key) => Ok(Self::Delete(key, deleted)),
                    None => Err((Delta::Deleted(deleted), known_key)),
                }
            }
            other => Err((other, known_key)),
        }
    }
}

/// Applies a run of writes with one [`Store::apply`], then notifies of each in order, as
/// [`apply_one`] would have. A store that refuses the batch (which then changed nothing)
/// gets its writes back as deltas, to be applied one by one.
fn apply_run<K>(
    store: &dyn Store<K>,
    run: Vec<Write<K>>,
    is_initial_list: bool,
    notify: &mut dyn FnMut(Notification<K>),
) -> Option<Vec<(Delta<K>, Option<ObjectKey>)>> {
    if run.is_empty() {
        return None;
    }
    let ops = run
        .iter()
        .map(|write| match write {
            Write::Upsert(obj) => StoreOp::Upsert(obj.clone()),
            Write::Delete(key, _) => StoreOp::Delete(key.clone()),
        })
        .collect();
    let replaced = match store.apply(ops) {
        Ok(replaced) => replaced,
        Err(e) => {
            tracing::debug!(error = %e, "a batch was refused; writing its changes one by one");
            let deltas = run.into_iter().map(|write| match write {
                Write::Upsert(obj) => (Delta::Updated(obj), None),
                Write::Delete(key, deleted) => (Delta::Deleted(deleted), Some(key)),
            });
            return Some(deltas.collect());
        }
    };
    for (write, old) in run.into_iter().zip(replaced) {
        notify(match (write, old) {
            (Write::Upsert(new), Some(old)) => Notification::Update { old, new },
            (Write::Upsert(object), None) => Notification::Add {
                object,
                is_initial_list,
            },
            (
                Write::Delete(
                    _,
                    Deleted::FinalStateUnknown {
                        key,
                        last_known: None,
                    },
                ),
                cached,
            ) => Notification::Delete(Deleted::FinalStateUnknown {
                key,
                last_known: cached,
            }),
            (Write::Delete(_, deleted), _) => Notification::Delete(deleted),
        });
    }
    None
}

/// Applies one delta; `known_key`, if given, is the key the store files its object under.
fn apply_one<K>(
    store: &dyn Store<K>,
    delta: Delta<K>,
    known_key: Option<ObjectKey>,
    is_initial_list: bool,
    notify: &mut dyn FnMut(Notification<K>),
) -> Result<(), StoreError> {
    match delta {
        Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
            upsert(store, obj, known_key, is_initial_list, notify)?
        }
        Delta::Deleted(deleted) => {
            let key = match &deleted {
                Deleted::Object(_) => None,
                Deleted::FinalStateUnknown { key, .. } => Some(key.clone()),
            };
            let key = match (key.or(known_key), &deleted) {
                (Some(key), _) => key,
                (None, Deleted::Object(obj)) => store.key_of(obj)?,
                (None, Deleted::FinalStateUnknown { key, .. }) => key.clone(),
            };
            let cached = store.delete(&key);
            let deleted = match deleted {
                Deleted::FinalStateUnknown {
                    key,
                    last_known: None,
                } => Deleted::FinalStateUnknown {
                    key,
                    last_known: cached,
                },
                other => other,
            };
            notify(Notification::Delete(deleted));
        }
        Delta::ReplacedAll {
            objects,
            resource_version,
        } => {
            let diff = store.replace(objects, &resource_version)?;
            for (key, last) in diff.deleted {
                notify(Notification::Delete(Deleted::FinalStateUnknown {
                    key,
                    last_known: Some(last),
                }));
            }
            for (old, new) in diff.updated {
                notify(Notification::Update { old, new });
            }
            for object in diff.added {
                notify(Notification::Add {
                    object,
                    is_initial_list,
                });
            }
        }
        Delta::ListPart(objects) => {
            // One write of the store for the whole part (a compact store encodes it in
            // parallel).
            let ops = objects.iter().cloned().map(StoreOp::Upsert).collect();
            let replaced = store.apply(ops)?;
            for (object, old) in objects.into_iter().zip(replaced) {
                notify(match old {
                    Some(old) => Notification::Update { old, new: object },
                    None => Notification::Add {
                        object,
                        is_initial_list,
                    },
                });
            }
        }
        Delta::ListEnd {
            listed,
            resource_version,
        } => {
            for key in store.list_keys() {
                if listed.contains(&key) {
                    continue;
                }
                if let Some(last) = store.delete(&key) {
                    notify(Notification::Delete(Deleted::FinalStateUnknown {
                        key,
                        last_known: Some(last),
                    }));
                }
            }
            store.set_resource_version(&resource_version);
        }
        Delta::Bookmark { resource_version } => store.set_resource_version(&resource_version),
    }
    Ok(())
}

fn upsert<K>(
    store: &dyn Store<K>,
    obj: Arc<K>,
    known_key: Option<ObjectKey>,
    is_initial_list: bool,
    notify: &mut dyn FnMut(Notification<K>),
) -> Result<(), StoreError> {
    let old = match known_key {
        Some(key) => store.update_with_key(key, obj.clone())?,
        None => store.update(obj.clone())?,
    };
    match old {
        Some(old) => notify(Notification::Update { old, new: obj }),
        None => notify(Notification::Add {
            object: obj,
            is_initial_list,
        }),
    }
    Ok(())
}

#[cfg(test)]
mod tests;
