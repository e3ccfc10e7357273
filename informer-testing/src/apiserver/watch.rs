//! Watch streams: newline-delimited JSON events over a chunked response.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::time::{Instant, Interval, Sleep};

use super::resource::ResourceType;
use super::server::Shared;
use super::storage::queue::{Closed, Queue};
use super::storage::{Initial, InitialEvents, Registration, WatchMessage};
use super::strategy;

pub(crate) use informer_core::lister_watcher::INITIAL_EVENTS_END_ANNOTATION;

/// One event line around an object's JSON.
fn line(event_type: &str, object_json: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(object_json.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(event_type.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(object_json);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

fn value_line(event_type: &str, object: &Value) -> Bytes {
    // Serializing a `Value` cannot fail.
    line(event_type, &serde_json::to_vec(object).unwrap_or_default())
}

fn bookmark(resource: &ResourceType, revision: u64, initial_events_end: bool) -> Value {
    // The watch cache sends an empty object of the type with only its resourceVersion set: a
    // built-in type's Go zero struct written out (`spec: {containers: null}`, ...), a custom
    // resource's bare apiVersion and kind. `creationTimestamp` is `omitzero` (1.34+): absent.
    let mut object = strategy::empty_object(resource);
    let mut metadata = json!({"resourceVersion": revision.to_string()});
    if initial_events_end {
        metadata["annotations"] = json!({ INITIAL_EVENTS_END_ANNOTATION: "true" });
    }
    object["metadata"] = metadata;
    object
}

/// The state of one watch response body: first the initial events (read lazily from the
/// snapshot the watch started at), then its queue, with bookmarks when the queue is idle.
pub(crate) struct WatchStream {
    shared: Arc<Shared>,
    id: Option<u64>,
    resource: Arc<ResourceType>,
    queue: Arc<Queue<WatchMessage>>,
    initial: Option<InitialEvents>,
    bookmarks: Option<Interval>,
    deadline: Option<Pin<Box<Sleep>>>,
    done: bool,
    /// No bookmark names a revision up to this one (the version a watch from the future
    /// asked for).
    after: u64,
}

impl WatchStream {
    /// The stream of a registered watch.
    pub(crate) fn new(
        shared: Arc<Shared>,
        registration: Registration,
        resource: Arc<ResourceType>,
        bookmark_interval: Option<Duration>,
        timeout: Option<Duration>,
    ) -> Self {
        let bookmarks = bookmark_interval.filter(|d| !d.is_zero()).map(|period| {
            let mut interval = tokio::time::interval_at(Instant::now() + period, period);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            interval
        });
        Self {
            shared,
            id: Some(registration.id),
            resource,
            queue: registration.queue,
            initial: registration.initial,
            bookmarks,
            deadline: timeout.map(|t| Box::pin(tokio::time::sleep(t))),
            done: false,
            after: registration.after,
        }
    }

    /// A stream that only sends what a closed queue holds (e.g. an error event).
    pub(crate) fn finished(
        shared: Arc<Shared>,
        resource: Arc<ResourceType>,
        queue: Queue<WatchMessage>,
    ) -> Self {
        Self {
            shared,
            id: None,
            resource,
            queue: Arc::new(queue),
            initial: None,
            bookmarks: None,
            deadline: None,
            done: false,
            after: 0,
        }
    }

    fn encode(&mut self, message: WatchMessage) -> Bytes {
        match message {
            WatchMessage::Event(event, object) => {
                line(event.as_str(), self.resource.present(&object).json())
            }
            WatchMessage::Error(status) => {
                self.done = true;
                value_line("ERROR", &status)
            }
            WatchMessage::Raw(raw) => Bytes::from(format!("{raw}\n")),
        }
    }

    /// The next chunk, or `None` when the watch ends: at its timeout, when the server closes
    /// it, or when it fell too far behind.
    pub(crate) async fn next_chunk(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        loop {
            if self.deadline.as_ref().is_some_and(|d| d.is_elapsed()) {
                return None;
            }
            if let Some(initial) = self.initial.as_mut() {
                if self.queue.closed() == Some(Closed::Overflowed) {
                    return None;
                }
                match initial.next() {
                    Initial::Event(object) => {
                        return Some(line("ADDED", self.resource.present(&object).json()));
                    }
                    Initial::Scanning => {
                        tokio::task::yield_now().await;
                        continue;
                    }
                    Initial::End {
                        revision,
                        bookmark: end,
                    } => {
                        self.initial = None;
                        if end {
                            let end = bookmark(&self.resource, revision, true);
                            return Some(value_line("BOOKMARK", &end));
                        }
                    }
                }
            }
            if let Some(message) = self.queue.try_pop() {
                return Some(self.encode(message));
            }
            let deadline = async {
                match self.deadline.as_mut() {
                    Some(d) => d.as_mut().await,
                    None => std::future::pending().await,
                }
            };
            let tick = async {
                match self.bookmarks.as_mut() {
                    Some(i) => {
                        i.tick().await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                message = self.queue.pop() => match message {
                    Some(message) => return Some(self.encode(message)),
                    None => return None,
                },
                () = deadline => return None,
                () = tick => {
                    // Read the revision first: every event up to it is queued by then, so
                    // with nothing queued, none is still to come below it.
                    let revision = self.shared.store.revision();
                    if self.queue.is_idle() && revision > self.after {
                        return Some(value_line("BOOKMARK", &bookmark(&self.resource, revision, false)));
                    }
                }
            }
        }
    }

    /// Turns the stream into a body stream of chunks.
    pub(crate) fn into_stream(self) -> impl futures::Stream<Item = Bytes> + Send + 'static {
        futures::stream::unfold(self, |mut state| async move {
            state.next_chunk().await.map(|chunk| (chunk, state))
        })
    }
}

impl Drop for WatchStream {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.shared.store.lock().remove_watcher(id);
        }
    }
}

#[cfg(test)]
mod tests;
