//! The loop behind [`Reflector::run`]: list (or stream the initial state), then watch, with
//! client-go's rules for resource versions, retries and backoff.

use std::collections::HashMap;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use informer_core::lister_watcher::{ListWatchError, WatchEvent, WatchParams, WatchStream};
use informer_core::resource_version::is_older;
use informer_core::{Fifo, FifoError, ObjectKey};
use kube::Resource;
use std::task::{Context, Poll, ready};
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::backoff::Backoff;
use super::{DEFAULT_PAGE_SIZE, Reflector, ReflectorError, inc};
use crate::jitter;
use crate::lister_watcher::INITIAL_EVENTS_END_ANNOTATION;
use std::sync::atomic::Ordering;

/// How long after the timeout it asked the server for the reflector ends a watch itself.
const WATCH_DEADLINE_GRACE: Duration = Duration::from_secs(30);

/// A watch that ends within this time without any event is "very short" and backs off.
const VERY_SHORT_WATCH: Duration = Duration::from_secs(1);

/// Events handled in one go before cancellation and resync are looked at again.
pub(super) const MAX_BATCH: usize = 256;

/// Why the loop stops.
pub(super) enum Stop {
    Cancelled,
    FifoClosed,
}

/// What to do after a watch ended or failed to start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum After {
    /// Watch again from the last resource version, now.
    Rewatch,
    /// Watch again from the last resource version after a backoff.
    Backoff,
    /// End this list-and-watch cycle: relist after a backoff.
    Relist,
    /// End this list-and-watch cycle: relist now (a `410` after a healthy watch).
    RelistNow,
}

/// How a list-and-watch cycle ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Relist {
    Now,
    AfterBackoff,
}

/// How long without an internal error closes the retry window (client-go's
/// `NewRetryWithDeadline(..., time.Minute, ...)`).
const INTERNAL_ERROR_QUIET_RESET: Duration = Duration::from_secs(60);

/// client-go's `RetryWithDeadline` for internal errors: whether a watch ended by
/// `500 InternalError` may be watched again instead of relisted.
#[derive(Default)]
struct InternalErrorRetry {
    first: Option<Instant>,
    last: Option<Instant>,
}

impl InternalErrorRetry {
    /// Records an internal error at `now`; whether it falls within `window` of the first one
    /// (a minute without one starts a new window).
    fn retry(&mut self, now: Instant, window: Duration) -> bool {
        if self
            .last
            .is_some_and(|last| now.saturating_duration_since(last) >= INTERNAL_ERROR_QUIET_RESET)
        {
            self.first = None;
        }
        let first = *self.first.get_or_insert(now);
        self.last = Some(now);
        if window.is_zero() {
            return false;
        }
        if now.saturating_duration_since(first) <= window {
            true
        } else {
            *self = Self::default();
            false
        }
    }
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Update,
    Delete,
}

/// An open watch.
struct Live<K> {
    stream: WatchStream<K>,
    started: Instant,
    deadline: Instant,
}

/// How the initial events of a streaming list ended.
enum Initial<K> {
    /// The initial-events-end bookmark arrived.
    Synced {
        live: Live<K>,
        objects: Vec<Arc<K>>,
        resource_version: String,
    },
    /// The request or the stream failed.
    Failed(ListWatchError),
    /// The stream ended before the bookmark.
    Ended,
    /// The bookmark did not arrive in time.
    TimedOut,
}

/// The mutable state of one [`Reflector::run`].
pub(super) struct Run<'a, K> {
    r: &'a Reflector<K>,
    cancel: &'a CancellationToken,
    backoff: Backoff,
    /// The last synced resource version (`""` before the first list).
    rv: String,
    /// client-go's `isLastSyncResourceVersionUnavailable`: the next list is a consistent read.
    rv_unavailable: bool,
    /// The server refused streaming lists (or never finished one): list instead.
    streaming_disabled: bool,
    /// The resync timer, running while watching.
    resync: Option<Interval>,
    /// A watch delivered an event since the last list: a `410` relists at once, even after
    /// an outage in between (at most once per list).
    healthy: bool,
    /// A watch was tried and ended since the last list, so the next one resumes from where the
    /// list or that watch left off: a `410` then says the history moved past this version
    /// (compacted while no watch was open), and relists at once (at most once per list).
    /// A `410` on the first watch after a list relists after a backoff, so a server that
    /// cannot watch from the versions it lists is not listed in a loop.
    resumed: bool,
    /// Something older than the cache was refused and no watch has delivered a newer event
    /// since: a list does not reset the backoff (a lagging server is not hammered).
    regressed: bool,
    /// The internal-error retry window of this list-and-watch cycle.
    internal_errors: InternalErrorRetry,
    /// Whether a delivered event has nothing to update: `healthy`, not `regressed`, and no
    /// backoff taken since the last one (so the hot path checks one flag).
    settled: bool,
}

impl<'a, K> Run<'a, K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    pub(super) fn new(r: &'a Reflector<K>, cancel: &'a CancellationToken) -> Self {
        Self {
            r,
            cancel,
            backoff: Backoff::new(r.config.backoff.clone()),
            rv: r.last_sync_resource_version().unwrap_or_default(),
            rv_unavailable: false,
            streaming_disabled: false,
            resync: None,
            healthy: false,
            resumed: false,
            regressed: false,
            internal_errors: InternalErrorRetry::default(),
            settled: false,
        }
    }

    pub(super) async fn main(mut self) {
        tracing::debug!(reflector = %self.r.name, "starting");
        loop {
            let stop = match self.list_and_watch().await {
                Ok(Relist::Now) => {
                    self.resync = None;
                    tracing::debug!(reflector = %self.r.name, "relisting now");
                    None
                }
                Ok(Relist::AfterBackoff) => {
                    self.resync = None;
                    let delay = self.backoff_delay();
                    tracing::debug!(reflector = %self.r.name, ?delay, "relisting after backoff");
                    self.pause(delay).await.err()
                }
                Err(stop) => Some(stop),
            };
            match stop {
                None => {}
                Some(Stop::Cancelled) => {
                    tracing::debug!(reflector = %self.r.name, "stopped");
                    return;
                }
                Some(Stop::FifoClosed) => {
                    tracing::debug!(reflector = %self.r.name, "the FIFO was closed; stopping");
                    return;
                }
            }
        }
    }

    /// One cycle: the initial state (streaming list or list), then watch until a relist is
    /// needed; says when to relist.
    async fn list_and_watch(&mut self) -> Result<Relist, Stop> {
        self.check_stop()?;
        self.internal_errors = InternalErrorRetry::default();
        let mut live = None;
        if self.r.config.streaming_list && !self.streaming_disabled {
            live = self.streaming_list().await?;
        }
        if live.is_none() && !self.list().await? {
            return Ok(Relist::AfterBackoff);
        }
        self.start_resync();
        self.watch_loop(live).await
    }

    // ----- list -----

    /// client-go's `relistResourceVersion`.
    fn relist_rv(&self) -> String {
        if self.rv_unavailable {
            String::new()
        } else if self.rv.is_empty() {
            "0".to_owned()
        } else {
            self.rv.clone()
        }
    }

    /// Lists and replaces the FIFO's content; `Ok(false)` if the list failed (recorded).
    ///
    /// The first list of an empty cache goes to the FIFO in parts as it is decoded, when
    /// the FIFO takes parts ([`Fifo::takes_list_parts`]): a large list is then never held
    /// whole. Later lists are atomic replaces (one [`Fifo::replace`]), so that readers never
    /// see half of a relist.
    async fn list(&mut self) -> Result<bool, Stop> {
        let r = self.r;
        let rv = self.relist_rv();
        let in_parts = r.fifo.takes_list_parts() && !r.fifo.has_synced() && self.rv.is_empty();
        let mut collect = if in_parts {
            Collect::Parts(PartSink::new(r))
        } else {
            Collect::Whole(Vec::new())
        };
        // In parts, the list is read no faster than the cache takes it (a compact cache
        // encodes every object): decoded objects wait in the FIFO a few parts at most.
        let room = in_parts.then_some(QUEUED_PARTS);
        let mut result = self
            .wait(with_room(&*r.fifo, room, list_all(r, &rv, &mut collect)))
            .await?;
        let mut consistent = rv.is_empty();
        if let Err(e) = &result
            && (e.is_gone() || e.is_too_large_resource_version())
        {
            tracing::debug!(
                reflector = %r.name, resource_version = %rv, error = %e,
                "resource version unavailable; listing again with a consistent read"
            );
            self.rv_unavailable = true;
            result = self
                .wait(with_room(&*r.fifo, room, list_all(r, "", &mut collect)))
                .await?;
            consistent = true;
        }
        if let Ok(listed) = &result
            && !consistent
            && is_older(&listed.resource_version, &self.rv)
        {
            // A lagging server: never take it; its current state is a consistent read.
            self.refuse("list", &listed.resource_version);
            self.rv_unavailable = true;
            result = self.wait(list_all(r, "", &mut collect)).await?;
            consistent = true;
        }
        let listed = match result {
            Ok(ok) => ok,
            Err(e) => {
                self.record(ReflectorError::List(e));
                return Ok(false);
            }
        };
        if consistent && is_older(&listed.resource_version, &self.rv) {
            inc(&r.shared.counters.consistent_rewinds);
            tracing::warn!(
                reflector = %r.name, resource_version = %listed.resource_version, cache = %self.rv,
                "a consistent list is older than the cache: the API server's storage went back \
                 in time (restored?); taking the server's state"
            );
        }
        if rv == "0" && listed.paginated && !r.shared.paginated_result.swap(true, Ordering::Relaxed)
        {
            tracing::debug!(
                reflector = %r.name,
                "the first list came back in pages (the API server's watch cache is off); \
                 every list pages from now on"
            );
        }
        self.rv_unavailable = false;
        let list_rv = listed.resource_version;
        let (count, replaced) = match collect {
            Collect::Whole(objects) => (objects.len(), r.fifo.replace(objects, list_rv.clone())),
            Collect::Parts(parts) => {
                let count = parts.count + parts.pending.len();
                (count, parts.finish(list_rv.clone()))
            }
        };
        match replaced {
            Ok(()) => {}
            Err(FifoError::Closed) => return Err(Stop::FifoClosed),
            Err(e) => {
                self.record(ReflectorError::Fifo(e));
                return Ok(false);
            }
        }
        self.set_rv(&list_rv);
        inc(&r.shared.counters.lists);
        self.clear_error();
        self.listed();
        tracing::debug!(reflector = %r.name, resource_version = %list_rv, count, "listed");
        Ok(true)
    }

    // ----- streaming list -----

    /// The initial state through a watch with `sendInitialEvents=true`; `Ok(None)` means
    /// "fall back to list".
    async fn streaming_list(&mut self) -> Result<Option<Live<K>>, Stop> {
        let r = self.r;
        loop {
            self.check_stop()?;
            let rv = if self.rv_unavailable {
                String::new()
            } else {
                self.rv.clone()
            };
            let timeout = self.watch_timeout();
            let params = self.watch_params(timeout, true);
            let started = Instant::now();
            let outcome = match self.wait(r.lw.watch(&params, &rv)).await? {
                Ok(stream) => {
                    inc(&r.shared.counters.watches);
                    let live = Live {
                        stream,
                        started,
                        deadline: started + timeout + WATCH_DEADLINE_GRACE,
                    };
                    self.collect_initial(live).await?
                }
                Err(e) => Initial::Failed(e),
            };
            match outcome {
                Initial::Synced {
                    live,
                    objects,
                    resource_version,
                } => {
                    if !rv.is_empty() && is_older(&resource_version, &self.rv) {
                        // A lagging server: stream again from a consistent read.
                        drop(live);
                        self.refuse("streaming list", &resource_version);
                        self.rv_unavailable = true;
                        let delay = self.backoff_delay();
                        self.pause(delay).await?;
                        continue;
                    }
                    let count = objects.len();
                    match r.fifo.replace(objects, resource_version.clone()) {
                        Ok(()) => {}
                        Err(FifoError::Closed) => return Err(Stop::FifoClosed),
                        Err(e) => {
                            self.record(ReflectorError::Fifo(e));
                            inc(&r.shared.counters.streaming_fallbacks);
                            return Ok(None);
                        }
                    }
                    self.set_rv(&resource_version);
                    self.rv_unavailable = false;
                    inc(&r.shared.counters.lists);
                    self.clear_error();
                    self.listed();
                    tracing::debug!(
                        reflector = %r.name, resource_version = %resource_version, count,
                        "streaming list done"
                    );
                    return Ok(Some(live));
                }
                Initial::Failed(e) => {
                    let gone = e.is_gone() || e.is_too_large_resource_version();
                    let retriable =
                        matches!(e, ListWatchError::Transport(_)) || e.is_too_many_requests();
                    let rejected = matches!(e.code(), Some(400 | 422));
                    if matches!(e, ListWatchError::Decode(_)) {
                        inc(&r.shared.counters.decode_errors);
                    }
                    self.record(ReflectorError::Watch(e));
                    if gone || retriable {
                        // As client-go: retry the streaming list, with a consistent read if
                        // the resource version is unavailable; never without a backoff.
                        self.rv_unavailable |= gone;
                        let delay = self.backoff_delay();
                        self.pause(delay).await?;
                        continue;
                    }
                    inc(&r.shared.counters.streaming_fallbacks);
                    if rejected {
                        tracing::info!(
                            reflector = %r.name,
                            "the API server refused a streaming list; using list and watch"
                        );
                        self.streaming_disabled = true;
                    }
                    return Ok(None);
                }
                Initial::Ended => {
                    tracing::debug!(
                        reflector = %r.name,
                        "streaming list ended before its initial-events-end bookmark; listing"
                    );
                    inc(&r.shared.counters.streaming_fallbacks);
                    return Ok(None);
                }
                Initial::TimedOut => {
                    let limit = r.config.streaming_list_timeout;
                    self.record(ReflectorError::StreamingListTimeout(limit));
                    inc(&r.shared.counters.streaming_fallbacks);
                    self.streaming_disabled = true;
                    return Ok(None);
                }
            }
        }
    }

    /// Collects the initial events of a streaming list until the initial-events-end bookmark.
    async fn collect_initial(&mut self, live: Live<K>) -> Result<Initial<K>, Stop> {
        let cancel = self.cancel;
        let Live {
            mut stream,
            started,
            deadline,
        } = live;
        let give_up = tokio::time::sleep(self.r.config.streaming_list_timeout);
        tokio::pin!(give_up);
        let mut temp = TempStore::default();
        loop {
            let item = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(Stop::Cancelled),
                item = stream.next() => item,
                _ = &mut give_up => return Ok(Initial::TimedOut),
            };
            let event = match item {
                None => return Ok(Initial::Ended),
                Some(Err(e)) => return Ok(Initial::Failed(e)),
                Some(Ok(event)) => event,
            };
            match event {
                WatchEvent::Added(obj) | WatchEvent::Modified(obj) => {
                    if let Some(key) = self.key_of(&obj) {
                        temp.upsert(key, transform(self.r, obj));
                    }
                }
                WatchEvent::Deleted(obj) => {
                    if let Some(key) = self.key_of(&obj) {
                        temp.remove(&key);
                    }
                }
                WatchEvent::Bookmark(bookmark) => {
                    inc(&self.r.shared.counters.bookmarks);
                    let end = bookmark
                        .metadata
                        .annotations
                        .get(INITIAL_EVENTS_END_ANNOTATION)
                        .is_some_and(|v| v == "true");
                    if end {
                        return Ok(Initial::Synced {
                            live: Live {
                                stream,
                                started,
                                deadline,
                            },
                            objects: temp.into_objects(),
                            resource_version: bookmark.metadata.resource_version,
                        });
                    }
                }
                WatchEvent::Error(status) => {
                    return Ok(Initial::Failed(ListWatchError::Api(status)));
                }
            }
        }
    }

    // ----- watch -----

    /// Watches (starting with `live` if a streaming list left one open) until a relist is
    /// needed; says when to relist.
    async fn watch_loop(&mut self, mut live: Option<Live<K>>) -> Result<Relist, Stop> {
        loop {
            self.check_stop()?;
            let after = match live.take() {
                Some(live) => self.consume(live).await?,
                None => match self.start_watch().await? {
                    Ok(live) => self.consume(live).await?,
                    Err(after) => after,
                },
            };
            // Set after the watch ended: its own `410` is judged by what came before it.
            self.resumed = true;
            match after {
                After::Rewatch => {}
                After::Backoff => {
                    let delay = self.backoff_delay();
                    tracing::debug!(reflector = %self.r.name, ?delay, "watching again after backoff");
                    self.pause(delay).await?;
                }
                After::Relist => return Ok(Relist::AfterBackoff),
                After::RelistNow => return Ok(Relist::Now),
            }
        }
    }

    async fn start_watch(&mut self) -> Result<Result<Live<K>, After>, Stop> {
        let r = self.r;
        let timeout = self.watch_timeout();
        let params = self.watch_params(timeout, false);
        let rv = self.rv.clone();
        let started = Instant::now();
        match self.wait(r.lw.watch(&params, &rv)).await? {
            Ok(stream) => {
                inc(&r.shared.counters.watches);
                self.clear_error();
                tracing::trace!(reflector = %r.name, resource_version = %rv, "watching");
                Ok(Ok(Live {
                    stream,
                    started,
                    deadline: started + timeout + WATCH_DEADLINE_GRACE,
                }))
            }
            Err(e) => Ok(Err(self.stream_error(e))),
        }
    }

    /// Pushes a watch's events to the FIFO until it ends; says what to do next.
    async fn consume(&mut self, live: Live<K>) -> Result<After, Stop> {
        let cancel = self.cancel;
        let Live {
            mut stream,
            started,
            deadline,
        } = live;
        let cancelled = cancel.cancelled();
        tokio::pin!(cancelled);
        let expired = tokio::time::sleep_until(deadline);
        tokio::pin!(expired);
        let mut events = 0u64;
        loop {
            // A source whose watches are always ready (in memory, say) never makes this
            // task wait: spend the task's budget as tokio's own channels do, so that it
            // yields now and then and cannot starve the runtime's other tasks.
            informer_core::queue::cooperate().await;
            let first = tokio::select! {
                biased;
                _ = &mut cancelled => return Err(Stop::Cancelled),
                item = stream.next() => Some(item),
                _ = tick(&mut self.resync) => None,
                _ = &mut expired => {
                    tracing::debug!(reflector = %self.r.name, "watch outlived its timeout; watching again");
                    return Ok(After::Rewatch);
                }
            };
            let Some(item) = first else {
                // A FIFO that fails to resync ends the watch, and the cycle relists after a
                // backoff, as client-go's ListAndWatch returns the resync's error.
                if !self.resync_now()? {
                    return Ok(After::Relist);
                }
                continue;
            };
            // Handle what is ready without going back through `select!`, up to a batch.
            if let Some(after) = self.handle_next(item, started, &mut events)? {
                return Ok(after);
            }
            let mut cx = Context::from_waker(futures::task::noop_waker_ref());
            for _ in 1..MAX_BATCH {
                let Poll::Ready(item) = stream.poll_next_unpin(&mut cx) else {
                    break;
                };
                if let Some(after) = self.handle_next(item, started, &mut events)? {
                    return Ok(after);
                }
            }
        }
    }

    /// Handles the next item of a watch stream (`None`: the stream ended); `Some` ends the
    /// watch.
    #[inline(always)]
    fn handle_next(
        &mut self,
        item: Option<Result<WatchEvent<Arc<K>>, ListWatchError>>,
        started: Instant,
        events: &mut u64,
    ) -> Result<Option<After>, Stop> {
        let Some(item) = item else {
            return Ok(Some(self.watch_closed(started, *events)));
        };
        *events += 1;
        self.handle(item)
    }

    fn watch_closed(&self, started: Instant, events: u64) -> After {
        if events == 0 && started.elapsed() < VERY_SHORT_WATCH {
            tracing::debug!(
                reflector = %self.r.name,
                "very short watch: it ended within a second without any event; backing off"
            );
            After::Backoff
        } else {
            tracing::trace!(reflector = %self.r.name, events, "watch ended; watching again");
            After::Rewatch
        }
    }

    /// Handles one item of a watch stream; `Some` ends the watch.
    #[inline(always)]
    fn handle(
        &mut self,
        item: Result<WatchEvent<Arc<K>>, ListWatchError>,
    ) -> Result<Option<After>, Stop> {
        let (op, obj) = match item {
            Ok(WatchEvent::Added(obj)) => (Op::Add, obj),
            Ok(WatchEvent::Modified(obj)) => (Op::Update, obj),
            Ok(WatchEvent::Deleted(obj)) => (Op::Delete, obj),
            other => return self.handle_other(other),
        };
        inc(&self.r.shared.counters.events);
        if let Some(rv) = obj.meta().resource_version.as_deref()
            && !rv.is_empty()
        {
            if is_older(rv, &self.rv) {
                let rv = rv.to_owned();
                return Ok(Some(self.refused_watch("watch event", &rv)));
            }
            set_rv(self.r, &mut self.rv, rv);
        }
        if !self.settled {
            self.delivered();
        }
        let Some(obj) = prepare(self.r, obj) else {
            return Ok(None);
        };
        self.push(obj, op)?;
        Ok(None)
    }

    /// Handles a bookmark, an error event or a stream error; `Some` ends the watch.
    #[inline(never)]
    fn handle_other(
        &mut self,
        item: Result<WatchEvent<Arc<K>>, ListWatchError>,
    ) -> Result<Option<After>, Stop> {
        match item {
            Ok(WatchEvent::Added(_) | WatchEvent::Modified(_) | WatchEvent::Deleted(_)) => {
                unreachable!("objects are handled by `handle`")
            }
            Ok(WatchEvent::Bookmark(bookmark)) => {
                inc(&self.r.shared.counters.bookmarks);
                let rv = bookmark.metadata.resource_version;
                if is_older(&rv, &self.rv) {
                    return Ok(Some(self.refused_watch("bookmark", &rv)));
                }
                if !self.settled {
                    self.delivered();
                }
                match self.r.fifo.bookmark(rv.clone()) {
                    Ok(()) => {}
                    Err(FifoError::Closed) => return Err(Stop::FifoClosed),
                    Err(e) => {
                        tracing::warn!(reflector = %self.r.name, error = %e, "FIFO refused a bookmark")
                    }
                }
                if !rv.is_empty() {
                    self.set_rv(&rv);
                }
                Ok(None)
            }
            Ok(WatchEvent::Error(status)) => {
                Ok(Some(self.stream_error(ListWatchError::Api(status))))
            }
            Err(e) => Ok(Some(self.stream_error(e))),
        }
    }

    /// Records a failed watch request or an error in a watch stream; says what to do next.
    fn stream_error(&mut self, e: ListWatchError) -> After {
        if matches!(e, ListWatchError::Decode(_)) {
            inc(&self.r.shared.counters.decode_errors);
        }
        let after = match classify(&e) {
            Class::Gone
                if std::mem::take(&mut self.healthy) | std::mem::take(&mut self.resumed) =>
            {
                self.settled = false;
                After::RelistNow
            }
            Class::Gone => After::Relist,
            Class::Retriable => After::Backoff,
            Class::Internal => {
                let window = self.r.config.max_internal_error_retry_duration;
                if self.internal_errors.retry(Instant::now(), window) {
                    After::Backoff
                } else {
                    After::Relist
                }
            }
            Class::Fatal => After::Relist,
        };
        self.record(ReflectorError::Watch(e));
        after
    }

    /// A list succeeded: the backoff starts over (unless the server was lagging), and a
    /// watch must deliver or be resumed again before a `410` relists at once.
    fn listed(&mut self) {
        self.healthy = false;
        self.resumed = false;
        self.settled = false;
        if !self.regressed {
            self.backoff.reset();
        }
    }

    /// A watch delivered an event or a bookmark: the server is serving, so the backoff starts
    /// again from its first delay, and a `410` from now on relists at once.
    #[cold]
    fn delivered(&mut self) {
        self.healthy = true;
        self.regressed = false;
        self.settled = true;
        self.backoff.reset();
    }

    /// Refuses something older than the cache (recorded and counted).
    fn refuse(&mut self, what: &'static str, resource_version: &str) {
        inc(&self.r.shared.counters.stale_refusals);
        self.regressed = true;
        self.settled = false;
        self.record(ReflectorError::WentBack {
            what,
            resource_version: resource_version.to_owned(),
            cache: self.rv.clone(),
        });
    }

    /// Refuses a watch event or bookmark older than the cache: the watch ends and the next
    /// list is a consistent read, after a backoff.
    #[cold]
    #[inline(never)]
    fn refused_watch(&mut self, what: &'static str, resource_version: &str) -> After {
        self.refuse(what, resource_version);
        self.rv_unavailable = true;
        self.healthy = false;
        After::Relist
    }

    /// The next backoff delay (the next delivered event starts the backoff over).
    fn backoff_delay(&mut self) -> Duration {
        self.settled = false;
        self.backoff.next_delay()
    }

    /// Pushes a watched object (already wrapped) to the FIFO.
    fn push(&mut self, obj: Arc<K>, op: Op) -> Result<(), Stop> {
        let fifo = &self.r.fifo;
        let result = match op {
            Op::Add => fifo.add(obj),
            Op::Update => fifo.update(obj),
            Op::Delete => fifo.delete(obj),
        };
        match result {
            Ok(()) => Ok(()),
            Err(FifoError::Closed) => Err(Stop::FifoClosed),
            Err(e) => {
                inc(&self.r.shared.counters.invalid_objects);
                tracing::warn!(reflector = %self.r.name, error = %e, "FIFO refused a watched object; skipped");
                Ok(())
            }
        }
    }

    // ----- resync -----

    fn start_resync(&mut self) {
        self.resync = self
            .r
            .config
            .resync_period
            .filter(|p| !p.is_zero())
            .map(|period| {
                let mut interval = tokio::time::interval_at(Instant::now() + period, period);
                interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
                interval
            });
    }

    /// Resyncs the FIFO if due; `Ok(false)` if its resync failed (logged).
    fn resync_now(&mut self) -> Result<bool, Stop> {
        let should = self.r.should_resync.as_ref().is_none_or(|f| f());
        if !should {
            return Ok(true);
        }
        match self.r.fifo.resync() {
            Ok(()) => {
                inc(&self.r.shared.counters.resyncs);
                tracing::trace!(reflector = %self.r.name, "resynced");
                Ok(true)
            }
            Err(FifoError::Closed) => Err(Stop::FifoClosed),
            Err(e) => {
                tracing::warn!(reflector = %self.r.name, error = %e, "resync failed; relisting");
                Ok(false)
            }
        }
    }

    // ----- helpers -----

    /// Stops before a new request once cancelled or once the FIFO is closed.
    fn check_stop(&self) -> Result<(), Stop> {
        if self.cancel.is_cancelled() {
            Err(Stop::Cancelled)
        } else if self.r.fifo.is_closed() {
            Err(Stop::FifoClosed)
        } else {
            Ok(())
        }
    }

    /// Awaits `fut`, resyncing on schedule meanwhile; stops on cancellation.
    async fn wait<F: Future>(&mut self, fut: F) -> Result<F::Output, Stop> {
        let cancel = self.cancel;
        tokio::pin!(fut);
        loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(Stop::Cancelled),
                out = &mut fut => return Ok(out),
                _ = tick(&mut self.resync) => {}
            }
            // Not watching yet: a failed resync is only logged.
            self.resync_now()?;
        }
    }

    async fn pause(&mut self, delay: Duration) -> Result<(), Stop> {
        self.wait(tokio::time::sleep(delay)).await
    }

    /// A random watch timeout in the configured range, in whole seconds (at least 1).
    fn watch_timeout(&self) -> Duration {
        let (lo, hi) = self.r.config.watch_timeout;
        let t = jitter::between(lo, hi);
        Duration::from_secs(t.as_secs().clamp(1, u64::from(u32::MAX)))
    }

    fn watch_params(&self, timeout: Duration, streaming: bool) -> WatchParams {
        let lp = &self.r.config.list_params;
        WatchParams {
            label_selector: lp.label_selector.clone(),
            field_selector: lp.field_selector.clone(),
            timeout: Some(u32::try_from(timeout.as_secs()).unwrap_or(u32::MAX)),
            bookmarks: true,
            send_initial_events: streaming,
        }
    }

    fn key_of(&self, obj: &K) -> Option<ObjectKey> {
        match ObjectKey::from_resource(obj) {
            Ok(key) => Some(key),
            Err(e) => {
                inc(&self.r.shared.counters.invalid_objects);
                tracing::warn!(reflector = %self.r.name, error = %e, "skipping an object without a name");
                None
            }
        }
    }

    fn set_rv(&mut self, rv: &str) {
        set_rv(self.r, &mut self.rv, rv);
    }

    fn record(&self, err: ReflectorError) {
        let r = self.r;
        match &err {
            ReflectorError::List(_) => inc(&r.shared.counters.list_errors),
            ReflectorError::Watch(_) => inc(&r.shared.counters.watch_errors),
            _ => {}
        }
        if err.is_gone() {
            tracing::debug!(reflector = %r.name, error = %err, "resource version too old");
        } else {
            tracing::warn!(reflector = %r.name, error = %err, "list/watch error");
        }
        let err = Arc::new(err);
        *r.shared.last_error.lock() = Some(err.clone());
        if let Some(handler) = r
            .late_watch_error_handler
            .get()
            .or(r.watch_error_handler.as_ref())
            && catch_unwind(AssertUnwindSafe(|| handler(&err))).is_err()
        {
            tracing::error!(reflector = %r.name, "the watch error handler panicked");
        }
    }

    fn clear_error(&self) {
        *self.r.shared.last_error.lock() = None;
    }
}

/// Checks the object has a name (counted and logged if not) and transforms it.
#[inline(always)]
fn prepare<K>(r: &Reflector<K>, obj: Arc<K>) -> Option<Arc<K>>
where
    K: Resource + Clone,
{
    if obj.meta().name.as_deref().is_none_or(str::is_empty) {
        inc(&r.shared.counters.invalid_objects);
        tracing::warn!(reflector = %r.name, "skipping an object without metadata.name");
        return None;
    }
    Some(transform(r, obj))
}

/// The object after the reflector's transform, if it has one. The transform takes the
/// object by value: it is moved out of its `Arc` when no one else holds it (as is the case
/// for what a source decodes), cloned otherwise.
#[inline(always)]
fn transform<K: Clone>(r: &Reflector<K>, obj: Arc<K>) -> Arc<K> {
    let obj = match &r.transform {
        None => obj,
        Some(f) => Arc::new(f(Arc::unwrap_or_clone(obj))),
    };
    match r.late_transform.get() {
        None => obj,
        Some(f) => Arc::new(f(Arc::unwrap_or_clone(obj))),
    }
}

/// Sets the run's and the shared last synced resource version (reusing both buffers).
fn set_rv<K>(r: &Reflector<K>, local: &mut String, rv: &str) {
    local.clear();
    local.push_str(rv);
    let mut shared = r.shared.last_sync_rv.lock();
    match shared.as_mut() {
        Some(s) => {
            s.clear();
            s.push_str(rv);
        }
        None => *shared = Some(rv.to_owned()),
    }
}

/// What kind of failure a watch request or stream error is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    /// `410 Gone` or "too large resource version": relist.
    Gone,
    /// Connection errors, malformed events, `429`: back off and watch again.
    Retriable,
    /// `500 InternalError`: watch again within the retry window, else relist.
    Internal,
    /// Every other error status: relist after a backoff (the list reports it).
    Fatal,
}

/// What kind of failure `e` is (client-go's `Reflector.watch`).
fn classify(e: &ListWatchError) -> Class {
    if e.is_gone() || e.is_too_large_resource_version() {
        return Class::Gone;
    }
    match e {
        ListWatchError::Transport(_) | ListWatchError::Decode(_) => Class::Retriable,
        ListWatchError::Api(_) if e.is_too_many_requests() => Class::Retriable,
        ListWatchError::Api(_) if e.is_internal_error() => Class::Internal,
        ListWatchError::Api(_) => Class::Fatal,
    }
}

/// The page size of a list at `rv` (see `ReflectorConfig::list_params`): client-go's pager
/// settings in `Reflector.list`.
fn page_size(configured: Option<u32>, rv: &str, paginated_result: bool) -> Option<u32> {
    match configured {
        Some(0) => None,
        Some(n) => Some(n),
        None if paginated_result || rv.is_empty() || rv == "0" => Some(DEFAULT_PAGE_SIZE),
        // A list at a version is served from the watch cache only without a limit.
        None => None,
    }
}

/// How many listed objects go to the FIFO in one part (see [`Run::list`]): parts of this
/// size cost next to nothing per object to queue and apply, and keep what is held between
/// the decoder and the cache small.
pub(super) const LIST_PART: usize = 256;

/// How many items the FIFO may hold (queued or being applied) before the reflector stops
/// reading a list it hands over in parts.
const QUEUED_PARTS: usize = 4;

/// `fut`, polled only while the FIFO has room for another `room` items (always if `None`).
fn with_room<'a, K, F>(
    fifo: &'a dyn Fifo<K>,
    room: Option<usize>,
    fut: F,
) -> impl Future<Output = F::Output> + 'a
where
    F: Future + 'a,
{
    let mut fut = Box::pin(fut);
    std::future::poll_fn(move |cx| {
        if let Some(max) = room {
            ready!(fifo.poll_room(cx, max));
        }
        fut.as_mut().poll(cx)
    })
}

/// A list's resource version, and whether it came in pages.
pub(super) struct Listed {
    resource_version: String,
    paginated: bool,
}

/// Where the objects of a list go.
enum Collect<'a, K> {
    /// Kept for one atomic `replace`.
    Whole(Vec<Arc<K>>),
    /// Handed to the FIFO in parts as they are decoded.
    Parts(PartSink<'a, K>),
}

impl<K> Collect<'_, K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// A list attempt starts (again): what an earlier attempt gave is dropped.
    fn restart(&mut self) {
        match self {
            Collect::Whole(objects) => objects.clear(),
            Collect::Parts(parts) => parts.restart(),
        }
    }

    fn take(&mut self, r: &Reflector<K>, objects: Vec<Arc<K>>) {
        match self {
            Collect::Whole(kept) => kept.extend(objects.into_iter().filter_map(|o| prepare(r, o))),
            Collect::Parts(parts) => parts.take(objects),
        }
    }
}

/// Hands a list to the FIFO in parts of [`LIST_PART`] objects.
struct PartSink<'a, K> {
    r: &'a Reflector<K>,
    /// Objects not handed over yet.
    pending: Vec<Arc<K>>,
    /// The next part starts the list (nothing of this attempt was handed over yet).
    first: bool,
    /// Objects handed over in this attempt.
    count: usize,
    /// The FIFO refused a part: the error, reported when the list ends.
    failed: Option<FifoError>,
}

impl<'a, K> PartSink<'a, K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    fn new(r: &'a Reflector<K>) -> Self {
        Self {
            r,
            pending: Vec::new(),
            first: true,
            count: 0,
            failed: None,
        }
    }

    fn restart(&mut self) {
        self.pending.clear();
        self.first = true;
        self.count = 0;
        self.failed = None;
    }

    fn take(&mut self, objects: Vec<Arc<K>>) {
        let r = self.r;
        self.pending
            .extend(objects.into_iter().filter_map(|o| prepare(r, o)));
        if self.pending.len() >= LIST_PART {
            self.hand_over();
        }
    }

    /// Hands the pending objects over as one part (an empty first part still starts the
    /// list).
    fn hand_over(&mut self) {
        if self.failed.is_some() {
            return;
        }
        let part = std::mem::take(&mut self.pending);
        let n = part.len();
        match self.r.fifo.list_part(part, self.first) {
            Ok(()) => {
                self.first = false;
                self.count += n;
            }
            Err(e) => self.failed = Some(e),
        }
    }

    /// Ends the list at `resource_version`.
    fn finish(mut self, resource_version: String) -> Result<(), FifoError> {
        self.hand_over();
        match self.failed {
            Some(e) => Err(e),
            None => self.r.fifo.replace(Vec::new(), resource_version),
        }
    }
}

/// A whole list at `rv`, page by page, as client-go's pager, its objects given to `out` as
/// they are decoded: the resource version is the first page's; an expired continue token
/// falls back to one full list without a limit (`out` is restarted).
async fn list_all<K>(
    r: &Reflector<K>,
    rv: &str,
    out: &mut Collect<'_, K>,
) -> Result<Listed, ListWatchError>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    let mut params = r.config.list_params.clone();
    let paginated_result = r.shared.paginated_result.load(Ordering::Relaxed);
    params.limit = page_size(params.limit, rv, paginated_result);
    params.continue_token = None;
    params.version_match = None;
    params.resource_version = (!rv.is_empty()).then(|| rv.to_owned());
    out.restart();
    let mut list_rv: Option<String> = None;
    let mut fell_back = false;
    let mut paginated = false;
    loop {
        let page =
            r.lw.list_in_parts(&params, &mut |objects| out.take(r, objects))
                .await;
        let page = match page {
            Ok(page) => page,
            Err(e) if e.is_gone() && params.continue_token.is_some() && !fell_back => {
                tracing::debug!(
                    reflector = %r.name, error = %e,
                    "continue token expired; listing everything in one request"
                );
                fell_back = true;
                params.limit = None;
                params.continue_token = None;
                params.resource_version = (!rv.is_empty()).then(|| rv.to_owned());
                out.restart();
                list_rv = None;
                continue;
            }
            Err(e) => return Err(e),
        };
        if list_rv.is_none() {
            list_rv = Some(page.resource_version.clone().unwrap_or_default());
        }
        match page.continue_.filter(|c| !c.is_empty()) {
            None => break,
            Some(token) => {
                if params.continue_token.as_deref() == Some(token.as_str()) {
                    return Err(ListWatchError::Decode(
                        "the API server returned the same continue token twice".to_owned(),
                    ));
                }
                paginated = true;
                params.continue_token = Some(token);
                params.resource_version = None;
                params.version_match = None;
            }
        }
    }
    Ok(Listed {
        resource_version: list_rv.unwrap_or_default(),
        paginated,
    })
}

async fn tick(resync: &mut Option<Interval>) {
    match resync {
        Some(interval) => {
            interval.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// The objects of a streaming list's initial events, by key, in arrival order.
struct TempStore<K> {
    index: HashMap<ObjectKey, usize>,
    objects: Vec<(ObjectKey, Arc<K>)>,
}

impl<K> Default for TempStore<K> {
    fn default() -> Self {
        Self {
            index: HashMap::new(),
            objects: Vec::new(),
        }
    }
}

impl<K> TempStore<K> {
    fn upsert(&mut self, key: ObjectKey, obj: Arc<K>) {
        match self.index.get(&key) {
            Some(&i) => self.objects[i].1 = obj,
            None => {
                self.index.insert(key.clone(), self.objects.len());
                self.objects.push((key, obj));
            }
        }
    }

    fn remove(&mut self, key: &ObjectKey) {
        if let Some(i) = self.index.remove(key) {
            self.objects.swap_remove(i);
            if let Some((moved, _)) = self.objects.get(i) {
                self.index.insert(moved.clone(), i);
            }
        }
    }

    fn into_objects(self) -> Vec<Arc<K>> {
        self.objects.into_iter().map(|(_, o)| o).collect()
    }
}

#[cfg(test)]
mod tests;
