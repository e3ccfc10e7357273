//! Reads at a resource version the server has not reached yet. kube-apiserver's watch cache
//! serves a get (`WaitUntilFreshAndGet`), a list at `NotOlderThan` or `Exact` a version
//! (`WaitUntilFreshAndGetList`) and a streaming watch (`sendInitialEvents=true`,
//! `waitUntilWatchCacheFreshAndForceAllEvents`) at such a version once it has caught up:
//! `waitUntilFreshAndBlock` waits up to `blockTimeout` (3 s) for it, and the read then
//! answers normally, or `504 Too large resource version` if the version never came. Without
//! a watch cache (`--watch-cache=false`) etcd answers the `504` at once.
//!
//! The wait happens before the request's handler runs (which then answers as the store
//! stands), on the store's published revision, without holding a thread.

use std::time::Duration;

use super::{ListOptions, Query, ResourcePath, Shared, filter, read_revision};
use crate::apiserver::faults::Verb;
use crate::apiserver::storage::ReadVersion;
use crate::apiserver::validation::path_segment_errors;

/// The watch cache's `blockTimeout`.
pub(super) const BLOCK_TIMEOUT: Duration = Duration::from_secs(3);

/// Waits, up to [`BLOCK_TIMEOUT`], for the revision a read served from the watch cache asks
/// for, when the store has not reached it yet. A request that its handler refuses
/// before reading (malformed or invalid options) does not wait: kube-apiserver refuses it
/// at once.
pub(super) async fn wait_until_fresh(
    shared: &Shared,
    verb: Verb,
    path: &ResourcePath,
    query: &Query,
) {
    if !shared.settings.watch_cache {
        return;
    }
    if let Some(revision) = awaited(verb, path, query)
        && revision > shared.store.revision()
    {
        shared
            .store
            .wait_for_revision(revision, BLOCK_TIMEOUT)
            .await;
    }
}

/// The revision a get, list or streaming watch reads at least, if the watch cache would
/// wait for it.
fn awaited(verb: Verb, path: &ResourcePath, query: &Query) -> Option<u64> {
    // A read at no version, or at any (`0`), never waits: most reads end here, before the
    // selectors and options are parsed (the handler parses them again).
    let rv = query.string("resourceVersion").filter(|rv| *rv != "0")?;
    match verb {
        Verb::Get => {
            let name = path.name.as_deref()?;
            let served = match path.subresource.as_deref() {
                None => true,
                Some("status") => !path.resource.custom || path.resource.status_subresource,
                Some(_) => false,
            };
            if !served || !path_segment_errors(name).is_empty() {
                return None;
            }
            read_revision(rv).ok()
        }
        Verb::List => {
            filter(path, query).ok()?;
            match ListOptions::parse(query, false).ok()?.read_version().ok()? {
                ReadVersion::NotOlderThan(n) | ReadVersion::Exact(n) => Some(n),
                ReadVersion::MostRecent | ReadVersion::Any => None,
            }
        }
        Verb::Watch => {
            filter(path, query).ok()?;
            let options = ListOptions::parse(query, true).ok()?;
            if options.send_initial_events != Some(true) {
                return None;
            }
            read_revision(rv).ok()
        }
        _ => None,
    }
}
