//! Transforms: functions applied to every object before it enters the cache (client-go's
//! `SetTransform`).
//!
//! A transform runs on the reflector's task, once per object received, before the object is
//! wrapped in its `Arc`; everything downstream (the FIFO, the store, notifications, listers)
//! sees only the transformed object. Use it to drop what no handler reads and so shrink the
//! cache: [`strip_managed_fields`] removes `metadata.managedFields`, which is often a third
//! of an object's size.

use std::sync::Arc;

use kube::Resource;

/// A transform: takes an object as decoded and returns what the cache keeps.
///
/// A transform must be a pure function of its input, must keep the object's name and
/// namespace (the cache files objects under them) and its `resourceVersion` (an update
/// whose old and new objects have the same resource version, none included, is a resync,
/// which only handlers with a resync period get: as in client-go's shared informers, a
/// transform that clears it loses every real update), and must not panic: a panic ends the
/// reflector, and [`run`](crate::informer::SharedIndexInformer::run) then stops the informer
/// and returns [`InformerError::ReflectorPanicked`](crate::informer::InformerError::ReflectorPanicked).
pub type Transform<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

/// Drops `metadata.managedFields` (server-side apply bookkeeping) from any Kubernetes object.
///
/// Pass it to [`InformerBuilder::transform`](crate::informer::InformerBuilder::transform), or
/// use [`InformerBuilder::drop_managed_fields`](crate::informer::InformerBuilder::drop_managed_fields).
///
/// ```
/// use informer_runtime::informer::transform::strip_managed_fields;
/// use k8s_openapi::api::core::v1::Pod;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
///
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("web-0".into());
/// pod.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
/// let pod = strip_managed_fields(pod);
/// assert!(pod.metadata.managed_fields.is_none());
/// assert_eq!(pod.metadata.name.as_deref(), Some("web-0"));
/// ```
pub fn strip_managed_fields<K: Resource>(mut obj: K) -> K {
    obj.meta_mut().managed_fields = None;
    obj
}

/// Runs `first`, then `second`.
pub(crate) fn chain<K: 'static>(first: Option<Transform<K>>, second: Transform<K>) -> Transform<K> {
    match first {
        None => second,
        Some(first) => Arc::new(move |obj| second(first(obj))),
    }
}

#[cfg(test)]
mod tests;
