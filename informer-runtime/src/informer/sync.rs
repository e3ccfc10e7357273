//! [`wait_for_cache_sync`]: waiting for several caches at once, until a cancellation
//! (client-go's `WaitForCacheSync` and `WaitForNamedCacheSync`).

use std::future::Future;

use futures::future::try_join_all;
use tokio_util::sync::CancellationToken;

/// Waits until every wait in `waits` has returned `true` (returns `true`), or until
/// `cancel` is cancelled or one of them returns `false` (returns `false`): client-go's
/// `WaitForCacheSync(stopCh, informer.HasSynced, ...)`.
///
/// A wait is any future of a `bool`: [`SharedIndexInformer::wait_for_sync`] (`false`: the
/// informer stopped without syncing) or [`HandlerRegistration::wait_synced`] (client-go's
/// `registration.HasSynced`: the handler has also handled every initial add). Both are
/// boxed futures, so the waits of informers of different types go in one array; box any
/// other kind of wait (`futures::FutureExt::boxed`) to add it.
///
/// The rules, one by one:
/// - no wait at all: `true` at once;
/// - waits that are ready when first polled win over a cancellation that is already
///   requested, as Go checks the caches once before it looks at the stop channel;
/// - a wait that returns `false` ends the wait at once with `false` (client-go would keep
///   polling an informer that can no longer sync until the stop channel closes);
/// - the waits are polled concurrently, in this task; no task is spawned, and the waits
///   still pending when this returns are dropped.
///
/// Never returns while an informer is never run and `cancel` is never cancelled: the
/// cancellation is the timeout. [`InformerFactory::wait_for_sync`] waits for a factory's
/// informers and says which did not sync and why.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use informer_runtime::informer::{CancellationToken, SharedIndexInformer, wait_for_cache_sync};
/// use informer_testing::MemoryListerWatcher;
/// use k8s_openapi::api::core::v1::{ConfigMap, Pod};
///
/// let pods = SharedIndexInformer::new(Arc::new(MemoryListerWatcher::<Pod>::new()));
/// let config = SharedIndexInformer::new(Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
/// let cancel = CancellationToken::new();
/// tokio::spawn({
///     let (pods, cancel) = (pods.clone(), cancel.clone());
///     async move { pods.run(cancel).await }
/// });
/// tokio::spawn({
///     let (config, cancel) = (config.clone(), cancel.clone());
///     async move { config.run(cancel).await }
/// });
/// let synced = wait_for_cache_sync(
///     &cancel,
///     [pods.wait_for_sync(), config.wait_for_sync()], // a Pod and a ConfigMap informer
/// )
/// .await;
/// assert!(synced);
///
/// cancel.cancel(); // stops the informers; a wait that has not synced yet gives up too
/// assert!(!wait_for_cache_sync(&cancel, [std::future::pending::<bool>()]).await);
/// # }
/// ```
///
/// [`SharedIndexInformer::wait_for_sync`]: super::SharedIndexInformer::wait_for_sync
/// [`HandlerRegistration::wait_synced`]: super::HandlerRegistration::wait_synced
/// [`InformerFactory::wait_for_sync`]: crate::factory::InformerFactory::wait_for_sync
pub async fn wait_for_cache_sync<I>(cancel: &CancellationToken, waits: I) -> bool
where
    I: IntoIterator,
    I::Item: Future<Output = bool>,
{
    let all = try_join_all(waits.into_iter().map(|wait| async move {
        // `Err` ends `try_join_all` at once: an informer that stopped will never sync.
        if wait.await { Ok(()) } else { Err(()) }
    }));
    tokio::select! {
        biased;
        synced = all => synced.is_ok(),
        () = cancel.cancelled() => false,
    }
}

/// [`wait_for_cache_sync`], logged under `controller` as client-go's
/// `WaitForNamedCacheSync` logs it: `Waiting for caches to sync` before, then
/// `Caches are synced` (info) or `Unable to sync caches` (error), each with the
/// `controller` field.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use informer_runtime::informer::{CancellationToken, wait_for_named_cache_sync};
///
/// let cancel = CancellationToken::new();
/// assert!(wait_for_named_cache_sync("pods", &cancel, [async { true }]).await);
/// # }
/// ```
pub async fn wait_for_named_cache_sync<I>(
    controller: &str,
    cancel: &CancellationToken,
    waits: I,
) -> bool
where
    I: IntoIterator,
    I::Item: Future<Output = bool>,
{
    tracing::info!(controller, "Waiting for caches to sync");
    let synced = wait_for_cache_sync(cancel, waits).await;
    if synced {
        tracing::info!(controller, "Caches are synced");
    } else {
        tracing::error!(controller, "Unable to sync caches");
    }
    synced
}

#[cfg(test)]
mod tests;
