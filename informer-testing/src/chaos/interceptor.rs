//! The harness's hands inside the server: every request of a controller incarnation (a
//! user of its own) passes [`ChaosInterceptor`], which crashes an incarnation right after a
//! write commits, holds the requests of a crashed one, fails requests, cuts the leader off
//! its Lease, and gates watch streams (pause, delay per resource, cut), tracing what each
//! incarnation sent and saw.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use http::StatusCode;
use parking_lot::Mutex;
use serde::Deserialize;
use tokio::sync::{OwnedMutexGuard, mpsc, watch};
use tokio::time::Instant;

use super::report::Trace;
use super::rng::hash_str;
use super::schedule::RequestClass;
use crate::apiserver::intercept::{Interceptor, Ticket};
use crate::apiserver::{ApiError, RequestInfo, StatusReason, Verb};

/// How the controllers' watch streams behave now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct WatchControl {
    /// Chunks are held, not delivered.
    pub paused: bool,
    /// Streams opened before the epoch last changed end at once, dropping what they hold.
    pub epoch: u64,
    /// Every chunk arriving now is delivered this late: up to `max`, per resource as the
    /// salt picks.
    pub delay: Option<(Duration, u64)>,
}

impl WatchControl {
    fn delay_for(&self, resource: &str) -> Duration {
        match self.delay {
            None => Duration::ZERO,
            Some((max, salt)) => {
                let millis = u64::try_from(max.as_millis()).unwrap_or(u64::MAX).max(1);
                Duration::from_millis(hash_str(salt, resource) % (millis + 1))
            }
        }
    }
}

struct FailRule {
    class: RequestClass,
    code: u16,
    remaining: u32,
}

#[derive(Default)]
struct State {
    /// Crashed incarnations: their requests are held.
    dead: HashSet<Arc<str>>,
    /// Crashed incarnations whose task is gone: their requests get 401.
    released: HashSet<Arc<str>>,
    /// Crash the incarnation whose write brings this to zero.
    crash_after: Option<u32>,
    failures: VecDeque<FailRule>,
    /// Incarnations whose Lease requests fail.
    partitioned: HashSet<Arc<str>>,
    /// Updates and patches whose object another client writes first.
    conflicts: u32,
    /// When a controller last asked for a list or a watch: a cache being rebuilt (after a
    /// reflector's backoff, say) is not a stuck controller.
    last_list_or_watch: Option<Instant>,
    /// The Leases each incarnation has written successfully: its first write of one is
    /// traced, its renewals are not (three sharded replicas renew a dozen Leases twice a
    /// second, which would push a failure's own steps out of the trace's tail).
    leases_written: HashSet<(Arc<str>, String)>,
}

/// Writes the object a request names, as another client would (its description, or why
/// not).
pub(crate) type Touch = Box<dyn Fn(&RequestInfo) -> Result<String, String> + Send + Sync>;

/// The shared control of one run's interceptor.
pub(crate) struct Control {
    state: Mutex<State>,
    watches: watch::Sender<WatchControl>,
    /// Bumped whenever a crashed incarnation is released.
    releases: watch::Sender<u64>,
    /// Serializes the controllers' writes with the crash decision after each.
    write_gate: Arc<tokio::sync::Mutex<()>>,
    crashes: mpsc::UnboundedSender<Arc<str>>,
    trace: Arc<Trace>,
    touch: std::sync::OnceLock<Touch>,
}

impl Control {
    /// How long ago a controller last asked for a list or a watch (`None`: never).
    pub(crate) fn since_last_list_or_watch(&self) -> Option<Duration> {
        self.state.lock().last_list_or_watch.map(|at| at.elapsed())
    }

    /// A control whose crash decisions go to `crashes` (the user to kill).
    pub(crate) fn new(trace: Arc<Trace>, crashes: mpsc::UnboundedSender<Arc<str>>) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State::default()),
            watches: watch::Sender::new(WatchControl::default()),
            releases: watch::Sender::new(0),
            write_gate: Arc::new(tokio::sync::Mutex::new(())),
            crashes,
            trace,
            touch: std::sync::OnceLock::new(),
        })
    }

    /// How the controller's conflicts are made: a write of the object by another client.
    pub(crate) fn set_touch(&self, touch: Touch) {
        let _ = self.touch.set(touch);
    }

    /// Another client writes the objects of the controller's next `count` updates and
    /// patches just before them.
    pub(crate) fn conflicts(&self, count: u32) {
        self.state.lock().conflicts += count;
    }

    /// Writes the object of a request first, if a conflict is due.
    fn conflict(&self, request: &RequestInfo, user: &Arc<str>) {
        if !matches!(request.verb, Verb::Update | Verb::Patch)
            || request.resource.as_deref() == Some("leases")
        {
            return;
        }
        {
            let mut state = self.state.lock();
            if state.conflicts == 0 {
                return;
            }
            state.conflicts -= 1;
        }
        let outcome = match self.touch.get() {
            Some(touch) => touch(request),
            None => Err("no way to write it".to_string()),
        };
        let what = match outcome {
            Ok(done) => done,
            Err(why) => format!("not written: {why}"),
        };
        self.trace.record(
            "fault",
            format!("before {user}'s {}: {what}", describe(request)),
        );
    }

    /// Arms a crash: the incarnation that commits the `n`-th controller write from now
    /// crashes right after it (`None` disarms).
    pub(crate) fn crash_after(&self, n: Option<u32>) {
        self.state.lock().crash_after = n.filter(|n| *n > 0);
    }

    /// Marks an incarnation crashed: its requests are held from now on.
    pub(crate) fn kill(&self, user: &Arc<str>) {
        self.state.lock().dead.insert(user.clone());
        // Wakes the watch gates, which end the streams of the dead.
        self.watches.send_modify(|_| {});
    }

    fn is_dead(&self, user: &Arc<str>) -> bool {
        self.state.lock().dead.contains(user)
    }

    /// Answers the held requests of a crashed incarnation (and all its later ones) with
    /// 401: its process is gone.
    pub(crate) fn release(&self, user: &Arc<str>) {
        self.state.lock().released.insert(user.clone());
        self.releases.send_modify(|n| *n += 1);
    }

    /// Fails the controllers' next `count` requests of `class` with `code`.
    pub(crate) fn fail(&self, class: RequestClass, code: u16, count: u32) {
        self.state.lock().failures.push_back(FailRule {
            class,
            code,
            remaining: count,
        });
    }

    /// Cuts an incarnation off its Lease (`false`: heals).
    pub(crate) fn partition(&self, user: &Arc<str>, cut: bool) {
        let mut state = self.state.lock();
        if cut {
            state.partitioned.insert(user.clone());
        } else {
            state.partitioned.remove(user);
        }
    }

    /// Changes how the watch streams behave.
    pub(crate) fn watches(&self, change: impl FnOnce(&mut WatchControl)) {
        self.watches.send_modify(change);
    }

    /// Clears every fault: no armed crash, no failures, no partitions, watches flowing
    /// undelayed (held chunks are delivered).
    pub(crate) fn clear(&self) {
        {
            let mut state = self.state.lock();
            state.crash_after = None;
            state.failures.clear();
            state.partitioned.clear();
            state.conflicts = 0;
        }
        self.watches.send_modify(|w| {
            w.paused = false;
            w.delay = None;
        });
    }

    /// Waits while `user` is crashed but not yet released; `Err(401)` once released.
    async fn hold_if_dead(&self, user: &Arc<str>) -> Result<(), ApiError> {
        let mut releases = self.releases.subscribe();
        loop {
            {
                let state = self.state.lock();
                if !state.dead.contains(user) {
                    return Ok(());
                }
                if state.released.contains(user) {
                    return Err(unauthorized());
                }
            }
            if releases.changed().await.is_err() {
                return Err(unauthorized());
            }
        }
    }

    /// The injected failure for a request, if one is due.
    fn injected(&self, request: &RequestInfo, user: &Arc<str>) -> Option<ApiError> {
        let mut state = self.state.lock();
        let leases = request.resource.as_deref() == Some("leases");
        if leases && state.partitioned.contains(user) {
            return Some(ApiError::internal(
                "injected: the leader is cut off from its Lease",
            ));
        }
        if leases {
            return None;
        }
        let class = if request.is_write() {
            RequestClass::Writes
        } else if matches!(request.verb, Verb::Get | Verb::List | Verb::Watch) {
            RequestClass::Reads
        } else {
            return None;
        };
        let rule = state
            .failures
            .iter_mut()
            .find(|r| r.class == class && r.remaining > 0)?;
        rule.remaining -= 1;
        let code = rule.code;
        state.failures.retain(|r| r.remaining > 0);
        Some(injected_error(code, request))
    }
}

fn unauthorized() -> ApiError {
    ApiError::new(StatusReason::Unauthorized, "Unauthorized")
}

fn injected_error(code: u16, request: &RequestInfo) -> ApiError {
    match code {
        409 => ApiError::conflict(
            request.resource.as_deref().unwrap_or(""),
            request.name.as_deref().unwrap_or(""),
            "the object has been modified; please apply your changes to the latest version and try again (injected)",
        ),
        429 => ApiError::too_many_requests(Duration::ZERO),
        _ => ApiError::internal("Internal error occurred: injected failure"),
    }
}

/// `verb resource ns/name`, for the trace.
pub(crate) fn describe(request: &RequestInfo) -> String {
    let mut text = format!(
        "{} {}",
        request.verb,
        request.resource.as_deref().unwrap_or("?")
    );
    match (&request.namespace, &request.name) {
        (Some(ns), Some(name)) => text.push_str(&format!(" {ns}/{name}")),
        (None, Some(name)) => text.push_str(&format!(" {name}")),
        (Some(ns), None) => text.push_str(&format!(" in {ns}")),
        (None, None) => {}
    }
    text
}

/// The interceptor installed on a run's server.
pub(crate) struct ChaosInterceptor(pub(crate) Arc<Control>);

impl Interceptor for ChaosInterceptor {
    fn before(&self, request: &RequestInfo) -> BoxFuture<'static, Result<Ticket, ApiError>> {
        let control = self.0.clone();
        let request = request.clone();
        Box::pin(async move {
            let Some(user) = request.user.clone() else {
                return Ok(Box::new(()) as Ticket);
            };
            control.hold_if_dead(&user).await?;
            if matches!(request.verb, Verb::List | Verb::Watch) {
                control.state.lock().last_list_or_watch = Some(Instant::now());
            }
            let guard: Option<OwnedMutexGuard<()>> = if request.is_write() {
                let guard = control.write_gate.clone().lock_owned().await;
                if control.state.lock().dead.contains(&user) {
                    drop(guard);
                    control.hold_if_dead(&user).await?;
                    return Err(unauthorized());
                }
                Some(guard)
            } else {
                None
            };
            // Under the gate: no write of this controller comes between the conflicting write
            // and its own.
            control.conflict(&request, &user);
            if let Some(err) = control.injected(&request, &user) {
                control.trace.record(
                    user.to_string(),
                    format!("{} -> {} (injected)", describe(&request), err.code()),
                );
                return Err(err);
            }
            Ok(Box::new(guard) as Ticket)
        })
    }

    fn after(
        &self,
        request: &RequestInfo,
        status: StatusCode,
        ticket: Ticket,
    ) -> BoxFuture<'static, ()> {
        let control = self.0.clone();
        let request = request.clone();
        Box::pin(async move {
            let Some(user) = request.user.clone() else {
                return;
            };
            let write = request.is_write();
            let renewal = write
                && status.is_success()
                && request.resource.as_deref() == Some("leases")
                && !control.state.lock().leases_written.insert((
                    user.clone(),
                    format!(
                        "{}/{}",
                        request.namespace.as_deref().unwrap_or_default(),
                        request.name.as_deref().unwrap_or_default()
                    ),
                ));
            if (write || request.verb == Verb::List || !status.is_success()) && !renewal {
                control.trace.record(
                    user.to_string(),
                    format!("{} -> {}", describe(&request), status.as_u16()),
                );
            }
            if !(write && status.is_success()) {
                return;
            }
            let crash = {
                let mut state = control.state.lock();
                match &mut state.crash_after {
                    Some(n) if *n <= 1 => {
                        state.crash_after = None;
                        state.dead.insert(user.clone());
                        true
                    }
                    Some(n) => {
                        *n -= 1;
                        false
                    }
                    None => false,
                }
            };
            // The gate opens for other incarnations; this one is dead before it opens.
            drop(ticket);
            if crash {
                control
                    .trace
                    .record(user.to_string(), "crashes right after that write committed");
                let _ = control.crashes.send(user.clone());
                // The response is never read: the process is gone.
                let _ = control.hold_if_dead(&user).await;
            }
        })
    }

    fn watch(
        &self,
        request: &RequestInfo,
        chunks: BoxStream<'static, Bytes>,
    ) -> BoxStream<'static, Bytes> {
        let Some(user) = request.user.clone() else {
            return chunks;
        };
        let resource = request.resource.clone().unwrap_or_default();
        let control = self.0.clone();
        control.trace.record(
            user.to_string(),
            format!("watch {} opened", describe(request)),
        );
        let (tx, rx) = mpsc::channel::<Bytes>(16);
        tokio::spawn(gate(chunks, control, user, resource, tx));
        Box::pin(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|chunk| (chunk, rx))
        }))
    }
}

/// Forwards a watch's chunks to its client as the control says: held while paused, each
/// late by its resource's delay, in order; ended (what is held dropped) when the epoch
/// changes.
async fn gate(
    mut chunks: BoxStream<'static, Bytes>,
    control: Arc<Control>,
    user: Arc<str>,
    resource: String,
    tx: mpsc::Sender<Bytes>,
) {
    let mut settings = control.watches.subscribe();
    let epoch = settings.borrow().epoch;
    let mut pending: VecDeque<(Instant, Bytes)> = VecDeque::new();
    let mut inner_done = false;
    loop {
        let now = settings.borrow_and_update().clone();
        if control.is_dead(&user) {
            return;
        }
        if now.epoch != epoch {
            control.trace.record(
                user.to_string(),
                format!(
                    "watch {resource} cut ({} events never delivered)",
                    pending.len()
                ),
            );
            return;
        }
        if !now.paused {
            while let Some((due, _)) = pending.front()
                && *due <= Instant::now()
            {
                let Some((_, chunk)) = pending.pop_front() else {
                    break;
                };
                trace_chunk(&control.trace, &user, &resource, &chunk);
                if tx.send(chunk).await.is_err() {
                    return;
                }
            }
        }
        if inner_done && pending.is_empty() {
            return;
        }
        let next_due = if now.paused {
            None
        } else {
            pending.front().map(|(due, _)| *due)
        };
        tokio::select! {
            chunk = chunks.next(), if !inner_done => match chunk {
                Some(chunk) => {
                    let due = Instant::now() + now.delay_for(&resource);
                    pending.push_back((due, chunk));
                }
                None => inner_done = true,
            },
            changed = settings.changed() => if changed.is_err() { return },
            () = sleep_until(next_due) => {}
            () = tx.closed() => return,
        }
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

#[derive(Deserialize)]
struct EventLine {
    #[serde(rename = "type")]
    kind: String,
    object: EventObject,
}

#[derive(Deserialize)]
struct EventObject {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: EventMeta,
    /// A `Status`'s (an `ERROR` event's).
    #[serde(default)]
    code: Option<u16>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EventMeta {
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    resource_version: Option<String>,
}

/// Records the events of a delivered chunk (bookmarks left out).
fn trace_chunk(trace: &Trace, user: &str, resource: &str, chunk: &[u8]) {
    for line in chunk.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let Ok(event) = serde_json::from_slice::<EventLine>(line) else {
            continue;
        };
        if event.kind == "BOOKMARK" {
            continue;
        }
        if event.kind == "ERROR" {
            trace.record(
                user,
                format!(
                    "saw ERROR on the {resource} watch: {} {}",
                    event.object.code.unwrap_or(0),
                    event.object.message.unwrap_or_default()
                ),
            );
            continue;
        }
        let meta = event.object.metadata;
        let name = match (meta.namespace, meta.name) {
            (Some(ns), Some(name)) => format!("{ns}/{name}"),
            (None, Some(name)) => name,
            _ => String::new(),
        };
        trace.record(
            user,
            format!(
                "saw {} {} {name} @{}",
                event.kind,
                event.object.kind,
                meta.resource_version.unwrap_or_default()
            ),
        );
    }
}
