//! Kubernetes Events (`events.k8s.io/v1`) with client-go's series: [`EventRecorder`], what
//! client-go's `k8s.io/client-go/tools/events` (`EventRecorder.Eventf` behind an
//! `EventBroadcaster`), controller-runtime's `mgr.GetEventRecorderFor(name)` and kube-runtime's
//! `kube::runtime::events::Recorder` are to their users.
//!
//! In a controller, take the controller's recorder, which reports as the controller's name:
//! [`Context::recorder`] in a [`Reconcile`] (derived controllers),
//! [`ControllerBuilder::event_recorder`] before `build` for a reconciler of your own (moved
//! into it), or [`ControllerContext::recorder`]. Elsewhere, make one with
//! [`EventRecorder::new`].
//!
//! | client-go | here |
//! | --- | --- |
//! | `broadcaster.NewRecorder(scheme, "my-controller")` | [`EventRecorder::new`]`(client, `[`Reporter::new`]`("my-controller"))` |
//! | `recorder.Eventf(obj, related, "Warning", reason, action, "note %s", x)` | `recorder.`[`record_for`](EventRecorder::record_for)`(&obj, `[`Event`]` { type_: `[`EventType::Warning`]`, reason, action, note: Some(format!(..)), related })`: in the background, retried as client-go retries |
//! | `Eventf` with an `*ObjectReference` | [`record`](EventRecorder::record)`(reference, event)` |
//! | (none: `Eventf` returns nothing) | [`publish_for`](EventRecorder::publish_for)`(&obj, &event).await` and [`publish`](EventRecorder::publish): awaited, the error returned, not retried |
//!
//! What an Event looks like, as client-go writes it: created in the namespace of the object
//! it is about (`default` for a cluster-scoped one), named `<object name>.<unix nanoseconds
//! in hex>`, with `eventTime`, `reportingController` and `reportingInstance` (the
//! [`Reporter`]), `regarding`, `related`, `type`, `reason`, `action` and `note`. A repeat of
//! the same event within six minutes makes the Event a series instead of a new Event (see
//! [`EventRecorder`]). Through the core v1 API (`kubectl get events`, `kubectl describe`) the
//! same Event reads with `involvedObject`, `message`, `reportingComponent` and `series`, as
//! kube-apiserver converts it; `source` and `count` stay empty there (the events.k8s.io API
//! refuses them) and `kubectl` shows the reporting controller and the series count instead.
//!
//! [`Context::recorder`]: crate::controller::Context::recorder
//! [`ControllerContext::recorder`]: crate::controller::ControllerContext::recorder
//! [`ControllerBuilder::event_recorder`]: crate::controller::ControllerBuilder::event_recorder
//! [`Reconcile`]: crate::controller::Reconcile

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as ApiEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, Resource};
use parking_lot::Mutex;

use crate::factory::NoClient;
use crate::names::{is_dns_subdomain, is_qualified_name};

/// How long after an event's last occurrence a repeat still joins its series: client-go's
/// `finishTime` (its broadcaster ends a series unseen for that long).
const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);

/// How many series a recorder remembers at most (the oldest is forgotten first): client-go's
/// `tools/record` event cache size.
const CACHE_CAPACITY: usize = 4096;

/// The longest `note` the API server accepts, in bytes (`NoteLengthLimit`).
const NOTE_LIMIT: usize = 1024;

/// The longest `reason`, `action` and `reportingInstance` the API server accepts, in bytes.
const FIELD_LIMIT: usize = 128;

/// The namespace of the Events about cluster-scoped objects (`metav1.NamespaceDefault`).
const CLUSTER_EVENTS_NAMESPACE: &str = "default";

/// How serious an [`Event`] is: its `type`.
///
/// ```
/// use informer_runtime::events::EventType;
///
/// assert_eq!(EventType::default(), EventType::Normal);
/// assert_eq!(EventType::Warning.as_str(), "Warning");
/// assert_eq!(EventType::Normal.to_string(), "Normal");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something happened as it should (`Normal`): nothing to act on.
    #[default]
    Normal,
    /// Something is wrong or may need a look (`Warning`).
    Warning,
}

impl EventType {
    /// The value of the Event's `type` field: `Normal` or `Warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One occurrence to publish with [`EventRecorder::publish`]: client-go's `Eventf`
/// arguments but the object (`regarding`), which is passed beside it.
///
/// What the API server requires, checked before any request: `reason` and `action` not empty
/// and at most 128 bytes each (a longer or empty one fails the publish). `note` is cut to
/// 1024 bytes (on a character boundary) rather than refused; an empty note is left out.
///
/// ```
/// use informer_runtime::events::{Event, EventType};
///
/// let event = Event {
///     type_: EventType::Warning,
///     reason: "InvalidConfig".into(), // UpperCamelCase, short: what `kubectl describe` shows
///     action: "Validate".into(),      // what the controller did or failed to do
///     note: Some("key `port` is not a number".into()),
///     ..Event::default()               // no related object
/// };
/// assert_eq!(event.related, None);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Event {
    /// `Normal` or `Warning`.
    pub type_: EventType,
    /// Why the action was taken, in UpperCamelCase (`ScalingReplicaSet`, `FailedCreate`):
    /// short, and stable enough for tools to match on. 1 to 128 bytes.
    pub reason: String,
    /// What the controller did or failed to do (`Create`, `Scale`, `Validate`). 1 to 128
    /// bytes.
    pub action: String,
    /// A human-readable description (`kubectl describe`'s `Message`); cut to 1024 bytes.
    /// Not part of what makes two events the same: a repeat with another note joins the
    /// series of the first (whose note stays).
    pub note: Option<String>,
    /// A second object the event is about (`related`): say, the child a controller created
    /// for the object the event regards.
    pub related: Option<ObjectReference>,
}

/// Who publishes: the Event's `reportingController` and `reportingInstance`.
///
/// ```
/// use informer_runtime::events::Reporter;
///
/// let reporter = Reporter::new("example.com/widget-controller");
/// assert_eq!(reporter.controller, "example.com/widget-controller");
/// assert!(!reporter.instance.is_empty()); // POD_NAME, HOSTNAME, the host name, or the controller
///
/// let explicit = Reporter {
///     controller: "widget-controller".into(),
///     instance: "widget-controller-7d9f8-x2x4q".into(),
/// };
/// # let _ = explicit;
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reporter {
    /// `reportingController`: the controller's name (for a controller's context, the
    /// controller's name). The API server wants a qualified name (`name` or
    /// `prefix/name`: letters, digits, `-`, `_`, `.`, at most 63 characters after the prefix),
    /// checked before any request.
    pub controller: String,
    /// `reportingInstance`: which replica of the controller, 1 to 128 bytes.
    pub instance: String,
}

impl Reporter {
    /// The reporter of `controller`, its instance this process's identity: the `POD_NAME`
    /// environment variable (set it from the pod's `metadata.name` with the downward API, as
    /// kube-runtime's docs suggest), else `HOSTNAME` (a pod's name in a cluster), else the
    /// kernel's host name, else the controller's name. A value longer than the API's 128
    /// bytes is skipped for the next. (client-go names the instance
    /// `<controller>-<host name>`; set [`instance`](Self::instance) for that form.)
    ///
    /// ```
    /// use informer_runtime::events::Reporter;
    /// let reporter = Reporter::new("widget-controller");
    /// assert!(reporter.instance.len() <= 128);
    /// ```
    pub fn new(controller: impl Into<String>) -> Self {
        let controller = controller.into();
        let instance = instance_from(
            |name| std::env::var(name).ok(),
            || std::fs::read_to_string("/proc/sys/kernel/hostname").ok(),
        )
        .unwrap_or_else(|| controller.clone());
        Reporter {
            controller,
            instance,
        }
    }
}

/// The first usable identity: `POD_NAME`, `HOSTNAME` (through `env`), the kernel's host name.
fn instance_from(
    env: impl Fn(&str) -> Option<String>,
    kernel_host_name: impl FnOnce() -> Option<String>,
) -> Option<String> {
    let usable = |value: String| {
        let value = value.trim().to_owned();
        (!value.is_empty() && value.len() <= FIELD_LIMIT).then_some(value)
    };
    env("POD_NAME")
        .and_then(usable)
        .or_else(|| env("HOSTNAME").and_then(usable))
        .or_else(|| kernel_host_name().and_then(usable))
}

/// Publishes Kubernetes Events (`events.k8s.io/v1`), turning repeats into series as
/// client-go's `EventBroadcaster` does.
///
/// **What a publish does.** [`publish`](Self::publish) checks the event (see [`Event`] and
/// [`Reporter`]; a bad one fails without a request), then:
/// - the first occurrence creates an Event in the regarding object's namespace (`default` for
///   a cluster-scoped object), named `<object name>.<unix nanoseconds in hex>` (a random
///   UUID when that is not a valid name, as client-go does), `eventTime` now;
/// - a repeat of the same event within six minutes of its last occurrence patches that
///   Event's `series` instead: `count` 2 on the first repeat, then one more each time, and
///   `lastObservedTime` now. Two occurrences are the same event when they have the same
///   type, reason, action, regarding and related objects (client-go's key: the note is not
///   part of it). The regarding reference includes the object's `resourceVersion` (as
///   client-go's `GetReference` and [`publish_for`](Self::publish_for) set it), so a repeat
///   after the object changed starts a new Event; publish with a reference without it to
///   count every repeat on an object in one series;
/// - a repeat after six minutes without one creates a new Event;
/// - a patch that finds the Event gone (deleted, or expired: the API server keeps Events an
///   hour by default) creates it again, with its name and series.
///
/// **Two ways to publish.** [`publish`](Self::publish) (and `publish_for`) awaits its
/// request(s) and returns the API server's or the transport's error, not retried: in a
/// reconcile, log the error and go on (an Event is a report, and failing the reconcile for it
/// would redo the work it reports). [`record`](Self::record) (and `record_for`) is
/// client-go's `Eventf`: it returns at once and writes the Event in the background, trying
/// again after a transport failure (the API server unreachable) every 10 s or so, 12 tries
/// at most; what the API server refuses is logged, not retried. A first occurrence that
/// failed is forgotten (the next one creates an Event); a repeat that failed still counts in
/// the series.
///
/// **Memory.** The recorder remembers, per series, the Event's name and count (not the
/// Event), for six minutes after the last occurrence, and at most 4096 series: past that the
/// series seen least recently is forgotten (its next repeat creates a new Event). A
/// controller publishing for millions of objects holds at most that.
///
/// **Sharing.** Clones share the memory of series, so give each worker a clone (a
/// controller's context does: one recorder per context). Two recorders (two processes)
/// never join each other's series.
///
/// **Access.** The client needs `create` and `patch` on `events` in the API group
/// `events.k8s.io`.
///
/// ```
/// use informer_runtime::events::{Event, EventRecorder, EventType, Reporter};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use k8s_openapi::api::events::v1::Event as ApiEvent;
/// use kube::api::{Api, ListParams, PostParams};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let server = informer_testing::TestApiServer::start().await?;
/// # let client = server.client();
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("settings".into());
/// let cm = Api::<ConfigMap>::namespaced(client.clone(), "default")
///     .create(&PostParams::default(), &cm)
///     .await?;
///
/// let recorder = EventRecorder::new(client.clone(), Reporter::new("settings-controller"));
/// let event = Event {
///     type_: EventType::Warning,
///     reason: "InvalidConfig".into(),
///     action: "Validate".into(),
///     note: Some("key `port` is not a number".into()),
///     related: None,
/// };
/// recorder.publish_for(&cm, &event).await?;
/// recorder.publish_for(&cm, &event).await?; // the same again: a series of 2
///
/// let events = Api::<ApiEvent>::namespaced(client, "default")
///     .list(&ListParams::default())
///     .await?;
/// assert_eq!(events.items.len(), 1);
/// assert_eq!(events.items[0].series.as_ref().map(|s| s.count), Some(2));
/// assert_eq!(events.items[0].reporting_controller.as_deref(), Some("settings-controller"));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct EventRecorder {
    shared: Arc<Shared>,
}

struct Shared {
    /// `None`: a controller without a client; every publish fails with [`NoClient`].
    client: Option<Client>,
    reporter: Reporter,
    clock: Arc<dyn Clock>,
    series: Mutex<SeriesCache>,
    /// Events [`record`](EventRecorder::record)ed and not yet written or given up on.
    recording: AtomicUsize,
    /// How many of those there may be at once; more are dropped.
    recording_limit: usize,
    /// Recorded events dropped, queue full.
    dropped: AtomicU64,
}

/// How many times a recorded event is tried (client-go's `maxTriesPerEvent`).
const RECORD_TRIES: u32 = 12;

/// How long a recorded event waits before it is tried again, stretched by up to a quarter
/// (client-go's `sleepDuration`, jittered by 0.25).
const RECORD_RETRY: Duration = Duration::from_secs(10);

/// How many recorded events may be in the background at once (client-go's broadcaster queue
/// of 1000 events, which drops the new ones when full).
const RECORD_QUEUE: usize = 1000;

/// Takes one recorded event off [`Shared::recording`] when its task ends, however it ends.
struct Recording(Arc<Shared>);

impl Drop for Recording {
    fn drop(&mut self) {
        self.0.recording.fetch_sub(1, Ordering::AcqRel);
    }
}

impl fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventRecorder")
            .field("reporter", &self.shared.reporter)
            .field("client", &self.shared.client.is_some())
            .field("series", &self.shared.series.lock().len())
            .finish()
    }
}

impl EventRecorder {
    /// A recorder publishing through `client` as `reporter`, remembering no series yet.
    ///
    /// ```no_run
    /// use informer_runtime::events::{EventRecorder, Reporter};
    /// # async fn demo() -> Result<(), kube::Error> {
    /// let client = kube::Client::try_default().await?;
    /// let recorder = EventRecorder::new(client, Reporter::new("widget-controller"));
    /// # let _ = recorder;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(client: Client, reporter: Reporter) -> Self {
        Self::with_parts(
            Some(client),
            reporter,
            Arc::new(SystemClock),
            CACHE_CAPACITY,
        )
    }

    /// The recorder of the controller named `controller`: through `client`, or failing with
    /// [`NoClient`] without one.
    pub(crate) fn of_controller(client: Option<&Client>, controller: &str) -> Self {
        let reporter = Reporter::new(controller);
        match client {
            Some(client) => Self::new(client.clone(), reporter),
            None => Self::without_client(reporter),
        }
    }

    /// A recorder of a controller without a client: every publish of a valid event fails
    /// with [`NoClient`] (as a [`kube::Error::Service`]), without a request.
    pub(crate) fn without_client(reporter: Reporter) -> Self {
        Self::with_parts(None, reporter, Arc::new(SystemClock), CACHE_CAPACITY)
    }

    fn with_parts(
        client: Option<Client>,
        reporter: Reporter,
        clock: Arc<dyn Clock>,
        capacity: usize,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                client,
                reporter,
                clock,
                series: Mutex::new(SeriesCache::new(capacity, SERIES_WINDOW)),
                recording: AtomicUsize::new(0),
                recording_limit: RECORD_QUEUE,
                dropped: AtomicU64::new(0),
            }),
        }
    }

    /// Who this recorder publishes as.
    ///
    /// ```no_run
    /// # use informer_runtime::events::{EventRecorder, Reporter};
    /// # fn demo(client: kube::Client) {
    /// let recorder = EventRecorder::new(client, Reporter::new("widget-controller"));
    /// assert_eq!(recorder.reporter().controller, "widget-controller");
    /// # }
    /// ```
    pub fn reporter(&self) -> &Reporter {
        &self.shared.reporter
    }

    /// Publishes `event` about the object `regarding` refers to: creates an Event, or, for a
    /// repeat within six minutes, counts it in the series of the Event it repeats, as the
    /// type's docs describe. The reference is used as given (`kind`, `apiVersion`, `name`,
    /// `namespace`, `uid`, `resourceVersion`, `fieldPath`); its namespace is the Event's.
    ///
    /// # Errors
    /// A [`kube::Error::BuildRequest`] (a `Validation` error) for an event the API server
    /// would refuse, without a request: an empty reason or action, or one longer than 128
    /// bytes, or a reporter whose controller is not a qualified name or whose instance is
    /// empty or longer than 128 bytes. The API server's or the transport's error otherwise
    /// (not retried). [`NoClient`] for the recorder of a controller without a client.
    ///
    /// ```no_run
    /// use informer_runtime::events::{Event, EventRecorder, EventType};
    /// use k8s_openapi::api::core::v1::ObjectReference;
    /// # async fn demo(recorder: EventRecorder) {
    /// let node = ObjectReference {
    ///     api_version: Some("v1".into()),
    ///     kind: Some("Node".into()),
    ///     name: Some("worker-1".into()),
    ///     ..ObjectReference::default()
    /// };
    /// let event = Event { reason: "Drained".into(), action: "Drain".into(), ..Event::default() };
    /// if let Err(error) = recorder.publish(&node, &event).await {
    ///     eprintln!("event not recorded: {error}"); // an Event in namespace `default`
    /// }
    /// # }
    /// ```
    pub async fn publish(
        &self,
        regarding: &ObjectReference,
        event: &Event,
    ) -> Result<(), kube::Error> {
        let shared = &*self.shared;
        check(&shared.reporter, event)?;
        let Some(client) = &shared.client else {
            return Err(kube::Error::Service(Box::new(NoClient)));
        };
        let namespace = match regarding.namespace.as_deref() {
            Some(namespace) if !namespace.is_empty() => namespace,
            _ => CLUSTER_EVENTS_NAMESPACE,
        };
        let key = Arc::new(SeriesKey::new(regarding, event));
        let regarding_name = regarding.name.as_deref().unwrap_or_default();
        let step = shared
            .series
            .lock()
            .observe(key, shared.clock.now(), regarding_name);
        let api: Api<ApiEvent> = Api::namespaced(client.clone(), namespace);
        match step {
            Step::Create { key, name, first } => {
                let object = self.api_event(regarding, event, &name, namespace, first, None);
                if let Err(error) = api.create(&PostParams::default(), &object).await {
                    shared.series.lock().forget(&key, &name);
                    return Err(error);
                }
                Ok(())
            }
            Step::Patch {
                name,
                first,
                series,
            } => {
                let patch = Patch::Merge(SeriesPatch { series: &series });
                let error = match api.patch(&name, &PatchParams::default(), &patch).await {
                    Ok(_) => return Ok(()),
                    Err(error) if is_status(&error, 404) => error,
                    Err(error) => return Err(error),
                };
                // Gone (deleted, or past its TTL): created again, series and all.
                tracing::debug!(
                    event = %name, namespace, %error,
                    "the Event of a series is gone: creating it again"
                );
                let object = self.api_event(
                    regarding,
                    event,
                    &name,
                    namespace,
                    first,
                    Some(series.clone()),
                );
                match api.create(&PostParams::default(), &object).await {
                    Ok(_) => Ok(()),
                    // Created meanwhile by a concurrent publish of the series: patch that.
                    Err(error) if is_status(&error, 409) => api
                        .patch(&name, &PatchParams::default(), &patch)
                        .await
                        .map(drop),
                    Err(error) => Err(error),
                }
            }
        }
    }

    /// [`publish`](Self::publish) about `object`, referred to by its `apiVersion`, `kind`,
    /// `name`, `namespace`, `uid` and `resourceVersion` (client-go's `GetReference`; kube's
    /// `Resource::object_ref` leaves the resource version out).
    ///
    /// # Errors
    /// As [`publish`](Self::publish).
    ///
    /// ```no_run
    /// use informer_runtime::events::{Event, EventRecorder, EventType};
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// # async fn demo(recorder: EventRecorder, deployment: Deployment) {
    /// let event = Event {
    ///     type_: EventType::Normal,
    ///     reason: "ScalingReplicaSet".into(),
    ///     action: "Scale".into(),
    ///     note: Some("scaled up to 3".into()),
    ///     related: None,
    /// };
    /// if let Err(error) = recorder.publish_for(&deployment, &event).await {
    ///     eprintln!("event not recorded: {error}"); // a reconcile logs it and goes on
    /// }
    /// # }
    /// ```
    pub async fn publish_for<K>(&self, object: &K, event: &Event) -> Result<(), kube::Error>
    where
        K: Resource<DynamicType: Default>,
    {
        self.publish(&reference_to(object), event).await
    }

    /// Records `event` about the object `regarding` refers to, in the background, as
    /// client-go's `Eventf` does: returns at once; a task writes the Event as
    /// [`publish`](Self::publish) does (a series for repeats), and when the API server cannot
    /// be reached, tries again after about 10 s (jittered by up to a quarter), 12 tries in
    /// all. An event the API server refuses, or one it would refuse (checked here, before
    /// any request: see `publish`'s errors), is logged, not retried. At most 1000 recorded
    /// events wait at once per recorder (and its clones); more are dropped with a warning
    /// ([`dropped`](Self::dropped) counts them), as client-go's broadcaster drops events
    /// when its queue is full.
    ///
    /// Call it inside a tokio runtime (a reconcile, a task); outside one the event is
    /// logged as not recorded. The background write ends with the runtime.
    ///
    /// ```no_run
    /// use informer_runtime::events::{Event, EventRecorder, EventType};
    /// use k8s_openapi::api::core::v1::ObjectReference;
    /// # async fn demo(recorder: EventRecorder) {
    /// let node = ObjectReference {
    ///     api_version: Some("v1".into()),
    ///     kind: Some("Node".into()),
    ///     name: Some("worker-1".into()),
    ///     ..ObjectReference::default()
    /// };
    /// recorder.record(node, Event { reason: "Drained".into(), action: "Drain".into(), ..Event::default() });
    /// # }
    /// ```
    pub fn record(&self, regarding: ObjectReference, event: Event) {
        let shared = &self.shared;
        let name = regarding.name.as_deref().unwrap_or_default();
        if let Err(error) = check(&shared.reporter, &event) {
            tracing::error!(regarding = name, reason = %event.reason, %error, "event not recorded (the API server would refuse it)");
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::error!(regarding = name, reason = %event.reason, "event not recorded: record was called outside a tokio runtime");
            return;
        };
        if shared.recording.fetch_add(1, Ordering::AcqRel) >= shared.recording_limit {
            shared.recording.fetch_sub(1, Ordering::AcqRel);
            shared.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(regarding = name, reason = %event.reason, limit = shared.recording_limit, "event dropped: too many recorded events are waiting to be written");
            return;
        }
        let recording = Recording(shared.clone());
        let recorder = self.clone();
        runtime.spawn(async move {
            let _recording = recording;
            recorder.publish_retried(&regarding, &event).await;
        });
    }

    /// [`record`](Self::record) about `object`, referred to as
    /// [`publish_for`](Self::publish_for) refers to it: client-go's
    /// `recorder.Eventf(obj, related, type, reason, action, note)`.
    ///
    /// ```no_run
    /// use informer_runtime::events::{Event, EventRecorder, EventType};
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// # async fn demo(recorder: EventRecorder, deployment: Deployment) {
    /// recorder.record_for(&deployment, Event {
    ///     type_: EventType::Normal,
    ///     reason: "ScalingReplicaSet".into(),
    ///     action: "Scale".into(),
    ///     note: Some("scaled up to 3".into()),
    ///     related: None,
    /// });
    /// # }
    /// ```
    pub fn record_for<K>(&self, object: &K, event: Event)
    where
        K: Resource<DynamicType: Default>,
    {
        self.record(reference_to(object), event);
    }

    /// How many [`record`](Self::record)ed events this recorder and its clones dropped
    /// because 1000 were already waiting to be written.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// [`publish`](Self::publish), tried again after transport failures (client-go's
    /// `attemptRecording`), every failure logged.
    async fn publish_retried(&self, regarding: &ObjectReference, event: &Event) {
        let name = regarding.name.as_deref().unwrap_or_default();
        for attempt in 1..=RECORD_TRIES {
            let error = match self.publish(regarding, event).await {
                Ok(()) => return,
                Err(error) => error,
            };
            if !unreachable(&error) {
                tracing::error!(regarding = name, reason = %event.reason, error = %crate::api_error::brief(&error), "the API server refused the event (not retried)");
                return;
            }
            if attempt == RECORD_TRIES {
                tracing::error!(regarding = name, reason = %event.reason, error = %crate::api_error::brief(&error), tries = RECORD_TRIES, "unable to write the event (retry limit reached)");
                return;
            }
            tracing::warn!(regarding = name, reason = %event.reason, error = %crate::api_error::brief(&error), "unable to write the event (will retry)");
            tokio::time::sleep(crate::jitter::jitter(RECORD_RETRY, 0.25)).await;
        }
    }

    /// The Event object of one occurrence.
    fn api_event(
        &self,
        regarding: &ObjectReference,
        event: &Event,
        name: &str,
        namespace: &str,
        first: SystemTime,
        series: Option<EventSeries>,
    ) -> ApiEvent {
        let reporter = &self.shared.reporter;
        ApiEvent {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(namespace.to_owned()),
                ..ObjectMeta::default()
            },
            event_time: Some(micro_time(first)),
            series,
            reporting_controller: Some(reporter.controller.clone()),
            reporting_instance: Some(reporter.instance.clone()),
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            regarding: Some(regarding.clone()),
            related: event.related.clone(),
            note: event
                .note
                .as_deref()
                .filter(|note| !note.is_empty())
                .map(|note| truncated(note, NOTE_LIMIT).to_owned()),
            type_: Some(event.type_.as_str().to_owned()),
            ..ApiEvent::default()
        }
    }

    /// How many series the recorder remembers.
    #[cfg(test)]
    fn remembered(&self) -> usize {
        self.shared.series.lock().len()
    }
}

/// The reference client-go's `GetReference` makes of `object`.
fn reference_to<K: Resource<DynamicType: Default>>(object: &K) -> ObjectReference {
    let meta = object.meta();
    let dt = K::DynamicType::default();
    ObjectReference {
        api_version: Some(K::api_version(&dt).into_owned()),
        kind: Some(K::kind(&dt).into_owned()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        field_path: None,
    }
}

/// The body of a series patch: only `series`.
#[derive(Debug, serde::Serialize)]
struct SeriesPatch<'a> {
    series: &'a EventSeries,
}

/// Whether a publish failed before the API server answered (client-go retries those, and
/// not a `StatusError` or a request it could not build). A recorder without a client is not
/// unreachable: it has nothing to reach.
fn unreachable(error: &kube::Error) -> bool {
    match error {
        kube::Error::Service(inner) => !inner.is::<NoClient>(),
        kube::Error::HyperError(_) | kube::Error::ReadEvents(_) | kube::Error::Auth(_) => true,
        _ => false,
    }
}

fn is_status(error: &kube::Error, code: u16) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == code)
}

/// Refuses what the API server would (`ValidateEventCreate` of events.k8s.io/v1) in the parts
/// the caller chose.
fn check(reporter: &Reporter, event: &Event) -> Result<(), kube::Error> {
    bounded("reason", &event.reason)?;
    bounded("action", &event.action)?;
    bounded("reporting instance", &reporter.instance)?;
    if !is_qualified_name(&reporter.controller) {
        return Err(invalid(format!(
            "the reporting controller {:?} is not a qualified name (`name` or `prefix/name`: \
             letters, digits, '-', '_' and '.', starting and ending with a letter or digit, \
             at most 63 characters after an optional DNS subdomain prefix)",
            reporter.controller
        )));
    }
    Ok(())
}

fn bounded(field: &str, value: &str) -> Result<(), kube::Error> {
    if value.is_empty() {
        return Err(invalid(format!(
            "the event's {field} is empty (it takes 1 to {FIELD_LIMIT} bytes)"
        )));
    }
    if value.len() > FIELD_LIMIT {
        return Err(invalid(format!(
            "the event's {field} is {} bytes long, past the API's {FIELD_LIMIT} ({:?}...)",
            value.len(),
            truncated(value, 32)
        )));
    }
    Ok(())
}

fn invalid(message: String) -> kube::Error {
    kube::Error::BuildRequest(kube::core::request::Error::Validation(message))
}

/// `text` cut to at most `limit` bytes, on a character boundary.
fn truncated(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The name of a new Event about the object named `regarding`, at `nanos` since the epoch:
/// client-go's `GenerateEventName` (a random UUID when the name would be invalid).
fn event_name(regarding: &str, nanos: u128) -> String {
    let name = format!("{regarding}.{nanos:x}");
    if is_dns_subdomain(&name) {
        return name;
    }
    // A version 4 UUID.
    let bits = (rand::random::<u128>() & !(0xf << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62);
    let hex = format!("{bits:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

fn unix_nanos(time: SystemTime) -> u128 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos())
}

/// `time` as a MicroTime (microseconds, as the API keeps them).
fn micro_time(time: SystemTime) -> MicroTime {
    let micros = i64::try_from(unix_nanos(time) / 1_000).unwrap_or(i64::MAX);
    let timestamp = k8s_openapi::jiff::Timestamp::from_microsecond(micros)
        .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
    MicroTime(timestamp)
}

/// The wall clock of a recorder (a test's own, to move time without sleeping).
trait Clock: Send + Sync {
    fn now(&self) -> SystemTime;
}

struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// What makes two occurrences the same event (client-go's `eventKey`: type, action, reason,
/// regarding, related; the reporting controller and instance are the recorder's own). An
/// absent related object and an empty one are the same, as in client-go.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SeriesKey {
    type_: EventType,
    action: String,
    reason: String,
    regarding: ReferenceKey,
    related: ReferenceKey,
}

/// An `ObjectReference`'s fields, an empty string as absent.
#[derive(Debug, Default, PartialEq, Eq, Hash)]
struct ReferenceKey([Option<String>; 7]);

impl ReferenceKey {
    fn new(reference: &ObjectReference) -> Self {
        let field = |value: &Option<String>| value.clone().filter(|v| !v.is_empty());
        Self([
            field(&reference.api_version),
            field(&reference.kind),
            field(&reference.namespace),
            field(&reference.name),
            field(&reference.uid),
            field(&reference.resource_version),
            field(&reference.field_path),
        ])
    }
}

impl SeriesKey {
    fn new(regarding: &ObjectReference, event: &Event) -> Self {
        Self {
            type_: event.type_,
            action: event.action.clone(),
            reason: event.reason.clone(),
            regarding: ReferenceKey::new(regarding),
            related: event
                .related
                .as_ref()
                .map(ReferenceKey::new)
                .unwrap_or_default(),
        }
    }
}

/// What to send for one occurrence.
#[derive(Debug)]
enum Step {
    /// A new Event.
    Create {
        key: Arc<SeriesKey>,
        name: String,
        first: SystemTime,
    },
    /// A repeat: the series of Event `name`, first seen at `first`.
    Patch {
        name: String,
        first: SystemTime,
        series: EventSeries,
    },
}

/// A series remembered: its Event and its count.
#[derive(Debug)]
struct Remembered {
    name: String,
    first: SystemTime,
    last: SystemTime,
    /// Occurrences so far (1: a single Event, not yet a series).
    count: i32,
    /// Its place in [`SeriesCache::order`].
    seq: u64,
}

/// The series a recorder remembers, oldest last occurrence first out.
struct SeriesCache {
    entries: HashMap<Arc<SeriesKey>, Remembered>,
    /// The keys by their last occurrence (a sequence number, in order of occurrence).
    order: BTreeMap<u64, Arc<SeriesKey>>,
    next_seq: u64,
    /// The time of the last Event name handed out, in nanoseconds: names of one recorder are
    /// unique even when the clock has not moved.
    last_nanos: u128,
    capacity: usize,
    window: Duration,
}

impl SeriesCache {
    fn new(capacity: usize, window: Duration) -> Self {
        Self {
            entries: HashMap::new(),
            order: BTreeMap::new(),
            next_seq: 0,
            last_nanos: 0,
            capacity: capacity.max(1),
            window,
        }
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether an occurrence at `now` joins a series last seen at `last`.
    fn within(&self, last: SystemTime, now: SystemTime) -> bool {
        // A clock that went back: as if no time had passed.
        now.duration_since(last)
            .map_or(true, |since| since <= self.window)
    }

    /// Records an occurrence of `key` at `now` (about an object named `regarding`) and says
    /// what to send.
    fn observe(&mut self, key: Arc<SeriesKey>, now: SystemTime, regarding: &str) -> Step {
        self.expire(now);
        let seq = self.next_seq;
        self.next_seq += 1;
        let within = self
            .entries
            .get(&key)
            .map(|entry| self.within(entry.last, now));
        match (within, self.entries.get_mut(&key)) {
            (Some(true), Some(entry)) => {
                entry.count = entry.count.max(1).saturating_add(1);
                entry.last = now;
                let step = Step::Patch {
                    name: entry.name.clone(),
                    first: entry.first,
                    series: EventSeries {
                        count: entry.count,
                        last_observed_time: micro_time(now),
                    },
                };
                self.order.remove(&entry.seq);
                entry.seq = seq;
                self.order.insert(seq, key);
                return step;
            }
            // Past the window: a new Event.
            (_, Some(entry)) => {
                self.order.remove(&entry.seq);
                self.entries.remove(&key);
            }
            (_, None) => {}
        }
        while self.entries.len() >= self.capacity {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.entries.remove(&oldest);
        }
        let nanos = unix_nanos(now).max(self.last_nanos + 1);
        self.last_nanos = nanos;
        let name = event_name(regarding, nanos);
        self.entries.insert(
            key.clone(),
            Remembered {
                name: name.clone(),
                first: now,
                last: now,
                count: 1,
                seq,
            },
        );
        self.order.insert(seq, key.clone());
        Step::Create {
            key,
            name,
            first: now,
        }
    }

    /// Forgets the series of `key` if it is still that of Event `name` (its creation failed).
    fn forget(&mut self, key: &SeriesKey, name: &str) {
        if let Some(entry) = self.entries.get(key)
            && entry.name == name
        {
            self.order.remove(&entry.seq);
            self.entries.remove(key);
        }
    }

    /// Forgets the series last seen more than the window before `now`, oldest first.
    fn expire(&mut self, now: SystemTime) {
        while let Some((&seq, key)) = self.order.first_key_value() {
            let Some(entry) = self.entries.get(key) else {
                self.order.remove(&seq);
                continue;
            };
            if self.within(entry.last, now) {
                break;
            }
            let key = key.clone();
            self.order.remove(&seq);
            self.entries.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests;
